"""Wiring of `mini-fix export`: the ledger, the deployment's trajectory store, eval directories, the output file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any, TextIO

from bot.eval.export import OUTCOMES, ExportFilter, eval_trajectories, write_export
from bot.eval.export_app import RUN_SCAN_LIMIT, app_trajectories
from bot.settings import Settings
from bot.trajectory_store import open_trajectories


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `mini-fix export`."""
    parser.add_argument("--output", type=Path, help="JSONL file to write (default: standard output)")
    parser.add_argument("--outcome", choices=OUTCOMES, default="any")
    parser.add_argument("--since", type=_date, help="only runs started at or after this ISO date/time (UTC)")
    parser.add_argument("--repo", help="only runs of this owner/name")
    parser.add_argument("--clean", action="store_true", help="only issue-free runs (see the README)")
    parser.add_argument("--eval", type=Path, action="append", default=[], help="an eval output directory (repeatable)")
    parser.add_argument("--no-app", action="store_true", help="leave out the App's own runs (eval directories only)")


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write the export; 2 when the operator turned export off."""
    if not settings.training_export:
        print("mini-fix: export is turned off on this deployment (MINIFIX_TRAINING_EXPORT=false)", file=sys.stderr)
        return 2
    keep = ExportFilter(args.outcome, args.since, args.repo, args.clean)
    runs = chain(eval_trajectories(args.eval), [] if args.no_app else _app_runs(settings))
    if args.output is None:
        return _report(*write_export(runs, keep, settings.secrets, sys.stdout))
    with args.output.open("w", encoding="utf-8") as out:
        return _report(*write_export(runs, keep, settings.secrets, out))


def _app_runs(settings: Settings) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    from bot.ledger import open_ledger

    ledger = open_ledger(settings)
    try:
        jobs = ledger.list(limit=RUN_SCAN_LIMIT)
        outcomes = ledger.pr_outcomes()
    finally:
        ledger.close()
    yield from app_trajectories(open_trajectories(settings), jobs, outcomes)


def _report(written: int, redactions: int, out: TextIO = sys.stderr) -> int:
    note = f"; {redactions} credential-shaped string(s) redacted" if redactions else ""
    print(f"exported {written} run(s){note}", file=out)
    return 0


def _date(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)
