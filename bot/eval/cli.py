"""`mini-fix eval ...`: run tasks, compare two reports, or mine tasks from a repository's history."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from bot.agent.flags import add_agent_flags
from bot.settings import Settings

USAGE = """mini-fix eval TASKS [--output DIR] [--workers K] [--model NAME] [--api-base URL] [-c SPEC]... [--image I]
                     [--attempts N] [--attempt-workers K]
       mini-fix eval compare A B [--json]
       mini-fix eval mine GIT_DIR [--output FILE] [--runner auto|unittest|pytest] [--test-cmd CMD] ..."""


def _run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mini-fix eval", usage=USAGE, description="Run eval tasks and grade them.")
    p.add_argument("tasks", type=Path, help="a JSONL file of tasks, or a directory of them")
    p.add_argument("--output", type=Path, default=Path("eval-out"), help="output directory (reruns resume it)")
    p.add_argument("--workers", type=int, default=1, help="tasks run at once")
    add_agent_flags(p)
    p.add_argument(
        "--attempts",
        type=_positive,
        metavar="N",
        help="attempts per task, in parallel, each its own sandbox and temperature; the App's own tests choose "
        "one, which is graded (and every other submitted one, for `any_resolved`)",
    )
    p.add_argument(
        "--attempt-workers",
        type=_positive,
        metavar="K",
        help="a task's attempts run at once (default: all N); 1 runs them one after another, for a model server "
        "that answers one request at a time",
    )
    return p


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mini-fix eval compare", description="Per-task flips between two eval reports.")
    p.add_argument("a", type=Path, help="report.json (or its directory) of the first run")
    p.add_argument("b", type=Path, help="report.json (or its directory) of the second run")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    return p


def _mine_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mini-fix eval mine", description="Tasks from a repository's own history.")
    p.add_argument("git_dir", type=Path, help="a local git repository")
    p.add_argument("--output", type=Path, default=Path("mined.jsonl"), help="tasks file to write")
    p.add_argument("--repo", default="", help="owner/name for the tasks (default local/<directory name>)")
    p.add_argument("--rev", default="HEAD", help="walk the first-parent history of this revision")
    p.add_argument("--max-commits", type=int, default=200)
    p.add_argument(
        "--runner",
        choices=["auto", "unittest", "pytest"],
        default="auto",
        help="auto: the App's inference from each commit's build files (Python, Go, Rust, JavaScript, Java)",
    )
    p.add_argument("--test-cmd", help="runs named tests; {tests} = the ids (default from --runner)")
    p.add_argument("--list-cmd", help="prints one test id a line (default from --runner)")
    p.add_argument("--setup", action="append", default=[], help="a setup command (repeatable)")
    p.add_argument("--setup-network", action="store_true", help="give the setup commands a network")
    p.add_argument("--image", help="sandbox image")
    p.add_argument("--issues", type=Path, help="JSON list of issues {number, title, body} for linked statements")
    p.add_argument(
        "--statement-from-tests",
        action="store_true",
        help="without a linked issue, write the statement from the failing test's name and output (else skip)",
    )
    return p


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # so `finally` blocks remove the sandboxes and the report is still written


def main(argv: Sequence[str], settings: Settings) -> int:
    """Dispatch on the first word: `compare`, `mine`, or a tasks path."""
    argv = list(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    if argv[:1] == ["compare"]:
        return _compare(_compare_parser().parse_args(argv[1:]))
    if argv[:1] == ["mine"]:
        return _mine(_mine_parser().parse_args(argv[1:]), settings)
    return _run(_run_parser().parse_args(argv), settings)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from bot.eval.command import EvalRequest, eval_context, run_eval

    request = EvalRequest(
        args.tasks,
        args.output,
        args.workers,
        args.model,
        args.api_base,
        args.config,
        args.image,
        args.attempts,
        args.attempt_workers,
    )
    return run_eval(request, eval_context(request, settings))


def _compare(args: argparse.Namespace) -> int:
    from bot.eval.compare import compare, load_report, render_comparison

    diff = compare(load_report(args.a), load_report(args.b))
    print(json.dumps(diff, indent=2) if args.json else render_comparison(diff))
    return 0


def _mine(args: argparse.Namespace, settings: Settings) -> int:
    from bot.eval.mine_command import run_mine

    return run_mine(args, settings)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], Settings()))
