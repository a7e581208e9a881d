"""Running the agent: N attempts, each in its own sandbox, and the change the host takes out."""
