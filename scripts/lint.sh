#!/usr/bin/env bash
# The static checks CI runs before the tests: ruff's lint rules and formatting over the whole tree, mypy (strict)
# over the App's packages. Versions are pinned in pyproject.toml's dev extra, so a fresh machine formats alike.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy bot sandbox
