"""Judging finished attempts: refusals, the App's own checks in fresh sandboxes, the ranking."""
