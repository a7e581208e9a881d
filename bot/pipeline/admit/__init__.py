"""Admitting a job: may it run, with which resolved configuration, within which capacity."""
