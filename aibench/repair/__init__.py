"""The repair loop of a hand-over: re-test what a run did not pass, then compose the
attempts into one acceptance record of the fleet.

:mod:`~aibench.repair.identity` compares the hardware identity of each node (serials,
firmware, BIOS, driver) between two sets of preflight facts;
:mod:`~aibench.repair.planning` turns a run's failing, missing and errored verdicts into
the steps and subjects to run again (pure); :mod:`~aibench.repair.compose` composes the
attempts of a fleet, the latest attempt of each step and subject deciding;
:mod:`~aibench.repair.retest` and :mod:`~aibench.repair.accept` are what ``aibench
retest`` and ``aibench accept`` do with them.
"""
