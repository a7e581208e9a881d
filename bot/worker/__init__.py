"""The worker: claims jobs, holds their leases, runs the pipeline; wired once per process."""
