"""The dispatch queue: job ids on huey's storage; the ledger stays the truth."""
