"""Talking to GitHub and git: the branch, the push, the PR and its text, the status comment, the report."""
