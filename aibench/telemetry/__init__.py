"""Telemetry: time series of GPUs, hosts and BMCs recorded beside the steps of a run.

:class:`Sampler` runs the probes of every node at an interval, writes samples as they
arrive (an interrupted run keeps them, a resumed one continues the same series) and gives
their compact form for run.json (:func:`aibench.telemetry.store.compact`). Its failures
never fail the step it watches: they are recorded beside the series.
"""

from __future__ import annotations

from aibench.telemetry.sampler import Sampler, has_gpus
from aibench.telemetry.store import Sample, Store, compact

__all__ = ["Sample", "Sampler", "Store", "compact", "has_gpus"]
