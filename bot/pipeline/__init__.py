"""One job's run: admit -> task -> execute (sandbox, agent, diff) -> git -> publish -> status and outcome."""
