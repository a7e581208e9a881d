"""The worker's git at the base of the pipeline: hardened commands, host reads of untrusted repositories, diffs."""
