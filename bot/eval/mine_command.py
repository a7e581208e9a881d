"""Wiring of `mini-fix eval mine`: the App's sandbox settings, the Docker sandbox, the files written."""

from __future__ import annotations

import argparse
import sys

from bot.eval.mine import MineRequest, mine, write_summary
from bot.eval.tasks import write_tasks
from bot.pipeline.git.gitops import GitError
from bot.pipeline.runconfig import resolve
from bot.pipeline.runtime import Runtime
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings


def run_mine(args: argparse.Namespace, settings: Settings) -> int:
    """Mine tasks into args.output and a summary beside it; 0 when the history could be read."""
    request = MineRequest(
        args.git_dir,
        args.output,
        args.repo,
        args.rev,
        args.max_commits,
        args.runner,
        args.test_cmd,
        args.list_cmd,
        args.setup,
        args.setup_network,
        args.image,
        args.issues,
        args.statement_from_tests,
    )
    repo_config = RepoConfig(setup=request.setup, setup_network=request.setup_network, image=request.image)
    runtime = Runtime(settings)
    config = resolve(settings, runtime.agent_file(), repo_config, ceilings=False).sandbox
    try:
        mined = mine(request, runtime.sandboxes({"mini-fix.eval": "1"}), config, lambda line: print(line, flush=True))
    except GitError as exc:
        print(f"mini-fix: {args.git_dir}: {exc}", file=sys.stderr)
        return 2
    write_tasks(request.output, mined.tasks)
    summary_path = request.output.with_suffix(".summary.json")
    write_summary(summary_path, mined)
    summary = mined.summary()
    print(
        f"mine: {summary['candidates']} candidate(s), kept {summary['kept']}; tasks {request.output}, "
        f"reasons {summary_path}"
    )
    return 0
