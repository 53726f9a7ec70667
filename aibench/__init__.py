"""aibench: benchmarking and acceptance tests for AI compute clusters."""

__version__ = "0.1.0"
