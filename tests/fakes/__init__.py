"""The pytest fixtures of the fakes (``fixtures.py``); the fakes themselves are in the
top-level ``testbed`` package, which the benchmarks run too."""
