"""The `quotas:` section of `.github/mini-fix.yml`: an organisation may lower the operator's quotas, never raise them.

The repository's file and its organisation's (`<owner>/.github`) are both read and the lower value of each quota
taken, so a repository cannot lift what its organisation set. A value below the operator's (or where the operator
set none) applies; one above is ignored with a warning that the `/agent help` reply, the quota comment and the
worker's log show. 0 (or no value) in a file leaves the operator's quota as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.repo_config.schema import Quotas


def asked(configs: Iterable[Quotas]) -> dict[str, float]:
    """The lowest positive value each quota is given by these files (the repository's and its organisation's)."""
    found: dict[str, float] = {}
    for quotas in configs:
        for key, value in quotas.model_dump().items():
            if value:
                found[key] = min(found.get(key, float(value)), float(value))
    return found


def lowered(operator: Mapping[str, float], wanted: Mapping[str, float]) -> tuple[dict[str, float], list[str]]:
    """The operator's quotas (`key` -> limit, 0 = none) with the organisation's lower ones taken, and a warning for
    each value that is not lower (ignored)."""
    result, warnings = dict(operator), []
    for key, value in sorted(wanted.items()):
        if key not in result:
            continue
        mine = result[key]
        if mine <= 0 or value < mine:
            result[key] = value
        elif value > mine:
            warnings.append(
                f"`quotas.{key}: {value:g}` is above the operator's {mine:g} and is ignored: a repository's config "
                "may only lower a quota"
            )
    return result, warnings
