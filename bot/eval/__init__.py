"""Measure and learn: `mini-fix eval` (SWE-bench-style tasks), `eval mine`, `eval compare` and `mini-fix export`."""
