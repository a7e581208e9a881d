"""`python -m bot.preflight`: check the forges' credentials (GitHub's App, GitLab's instance or both) and model
settings in seconds, before slow setup steps.

Exit 0 when the App could start; else 2, with each problem and how to fix it (no GitHub App yet: `mini-fix setup`).
"""

from __future__ import annotations

import sys

from pydantic import ValidationError

from bot.settings import Settings, SettingsError


def problems(settings: Settings) -> list[str]:
    """What stops `mini-fix serve` from starting with these settings, each with its fix."""
    found = settings.forge_problems()  # GitHub's App, GitLab's instance or both: whichever is configured, whole
    if not settings.model_api_base:
        found.append("MINIFIX_MODEL_API_BASE is not set (the model server, e.g. http://localhost:8000/v1)")
    return found


def main() -> int:
    """Print the problems (if any) and return the exit status."""
    try:
        found = problems(Settings())
    except (SettingsError, ValidationError) as exc:  # pydantic's own validation of a malformed value
        found = [str(exc)]
    if not found:
        print("preflight: the forges' credentials and model settings are in place")
        return 0
    for problem in found:
        print(f"preflight: {problem}", file=sys.stderr)
    hint = "no GitHub App yet? run `.venv/bin/mini-fix setup` (see README.md), then run this again"
    print(f"preflight: {hint}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
