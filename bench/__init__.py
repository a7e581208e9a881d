"""Benchmarks run by hand (see each script's docstring)."""
