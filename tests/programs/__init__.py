"""Test-only programs started by the runner tests; never part of the package."""
