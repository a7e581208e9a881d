"""The PostgreSQL ledger driver (MINIFIX_DATABASE_URL=postgresql://...)."""
