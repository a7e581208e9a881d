"""The SQLite ledger driver (the default: a file in MINIFIX_DATA_DIR)."""
