"""Runners: one module per tool; each plans argv lists for a suite step."""

from aibench.runners.base import RUNNERS, Invocation, ProcessSpec, Runner, Slot

__all__ = ["RUNNERS", "Invocation", "ProcessSpec", "Runner", "Slot"]
