"""The soak: stress on every node at once for hours, telemetry beside it, judged on series.

:func:`aibench.soak.engine.run_soak` runs stress-ng on every node in chunks (each chunk's
rate is a sample, so a node whose rate falls is seen when it falls) for the duration, with
the telemetry sampler at its interval; it checkpoints after every chunk, so an interrupted
soak keeps its series and a second call continues it. :func:`aibench.soak.judge.judge`
turns the series and BMC events into verdicts that name the node, the part and the time.
"""
