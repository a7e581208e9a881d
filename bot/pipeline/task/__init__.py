"""What the agent is asked: the issue, a retry's guidance, a follow-up's CI log or review, all untrusted."""
