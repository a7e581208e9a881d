"""The `mini-fix` command line. It only parses arguments and wires components; the work lives elsewhere."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot.agent.config import AgentConfigError
from bot.agent.flags import add_agent_flags
from bot.eval.export_command import add_arguments as add_export_arguments
from bot.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from bot.worker.pool import Worker

    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mini-fix", description="Fix labelled GitHub issues with an agent.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_command in _COMMANDS:
        add_command(sub)
    return parser


def _add_serve(sub: _Subcommands) -> None:
    serve = sub.add_parser("serve", help="webhook server, with an embedded worker unless --no-worker")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this host only, e.g. behind a local reverse proxy or a "
        "tunnel); 0.0.0.0 to accept connections from other hosts, as the App's image, compose and k8s do",
    )
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument("--no-worker", action="store_true", help="API only; run `mini-fix worker` elsewhere")


def _add_worker(sub: _Subcommands) -> None:
    worker = sub.add_parser("worker", help="a worker process only")
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve this worker's /metrics, /healthz and /readyz on this port (all interfaces)",
    )


def _add_run(sub: _Subcommands) -> None:
    run = sub.add_parser("run", help="run the agent on a local checkout in the sandbox, no GitHub")
    run.add_argument("--repo", type=Path, required=True, help="path of a git checkout (never modified)")
    task = run.add_mutually_exclusive_group(required=True)
    task.add_argument("--task", help="the task text")
    task.add_argument("--task-file", type=Path, help="file holding the task text")
    add_agent_flags(run)
    run.add_argument("--output", type=Path, help="output directory (default ./out/<run id>)")
    run.add_argument(
        "--attempts",
        type=int,
        help="attempts in parallel (default MINIFIX_AGENT_ATTEMPTS, at most MINIFIX_MAX_AGENT_ATTEMPTS); "
        "the checkout's tests choose",
    )


def _add_show(sub: _Subcommands) -> None:
    show = sub.add_parser(
        "show",
        help="print a `mini-fix run`'s steps, patch and verdict from its output directory",
        description="Read a `mini-fix run --output DIR` back: the agent's steps, the patch, the App's checks of it "
        "(the repository's tests, the agent's test of the bug before and after the change) and the verdict. "
        "Exit 0 when the change's checks pass, 1 when not, 2 when DIR holds no run.",
    )
    show.add_argument("output", type=Path, help="the run's output directory (--output of `mini-fix run`)")
    show.add_argument("--no-steps", action="store_true", help="only the patch and the verdict")


def _add_setup(sub: _Subcommands) -> None:
    setup = sub.add_parser(
        "setup",
        help="create the GitHub App from app.yml and save its credentials to .env",
        description="Create the GitHub App from app.yml with GitHub's manifest flow and save its id, private key "
        "and webhook secret to the env file (mode 0600), with the settings below when you set them.",
        epilog="Settings read from the environment and saved to the env file too: MINIFIX_GITHUB_API_URL "
        "(GitHub Enterprise Server: https://HOST/api/v3; default https://api.github.com) and MINIFIX_PUBLIC_URL "
        "(where GitHub sends webhooks: PUBLIC_URL/webhook; the App's run links). Inside a git work tree the env "
        "file and the key must be ignored by git, or setup refuses to write them.",
    )
    setup.add_argument("--port", type=int, default=3333, help="port of the local setup page on 127.0.0.1")
    setup.add_argument("--org", help="create the App in this organisation (default: your user account)")
    setup.add_argument("--env-file", type=Path, default=Path(".env"), help="where the credentials are written")


def _add_eval(sub: _Subcommands) -> None:
    # bot/eval/cli.py parses the rest, and answers `mini-fix eval --help` itself.
    evaluate = sub.add_parser("eval", help="run eval tasks (`eval compare A B`, `eval mine GIT_DIR`)", add_help=False)
    evaluate.add_argument("eval_args", nargs=argparse.REMAINDER, help="see `mini-fix eval --help`")


def _add_export(sub: _Subcommands) -> None:
    add_export_arguments(sub.add_parser("export", help="runs as OpenAI chat-format JSONL training data"))


def _add_jobs(sub: _Subcommands) -> None:
    jobs = sub.add_parser("jobs", help="list the job ledger")
    jobs.add_argument("--json", action="store_true", help="one JSON object per line")
    jobs.add_argument("--limit", type=int, default=50)


def _add_usage(sub: _Subcommands) -> None:
    usage = sub.add_parser("usage", help="what runs used (tokens, model and CPU seconds), summed from the ledger")
    usage.add_argument(
        "--by",
        default="repo,day",
        help="comma-separated groups of repo, installation, day (default repo,day; empty: one total)",
    )
    usage.add_argument("--days", type=int, default=30, help="the last N UTC days, today included (0: all)")
    usage.add_argument("--installation", type=int, help="only this installation id")
    usage.add_argument("--json", action="store_true", help="one JSON object per line")


# One builder per subcommand, in the order `mini-fix --help` lists them.
_COMMANDS: tuple[Callable[[_Subcommands], None], ...] = (
    _add_serve,
    _add_worker,
    _add_run,
    _add_show,
    _add_setup,
    _add_eval,
    _add_export,
    _add_jobs,
    _add_usage,
)


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from bot.web.app import create_app

    settings.forges(webhooks_only=args.no_worker)  # fail before the slow worker wiring, naming what is missing
    worker = None if args.no_worker else _wire_worker(settings)
    app = create_app(settings, embedded_worker=worker)
    try:
        # The app's lifespan starts the worker and, on SIGTERM, puts its running jobs back in the queue.
        uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)
    finally:
        if worker is not None:
            worker.close()
    return 0


def _wire_worker(settings: Settings) -> Worker:
    from bot.worker.wiring import wire_worker  # the pipeline and its imports: only where a worker runs

    return wire_worker(settings)


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    worker = _wire_worker(settings)
    if args.metrics_port:
        from bot.worker.health_server import serve

        serve(args.metrics_port, worker.readiness)
        from bot import metrics

        metrics.watch_data_dir(settings.data_dir)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker.start()
    try:
        stop.wait()
    finally:
        worker.stop()  # running jobs go back to the queue; their containers are removed by the pipeline
        worker.close()
    return 0


def _run(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.local_run import LocalRunRequest, run_local

    try:
        task = args.task if args.task is not None else args.task_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"--task-file {args.task_file}: cannot be read ({exc})") from None
    request = LocalRunRequest(
        repo=args.repo,
        task=task,
        config=args.config,
        model=args.model or None,
        api_base=args.api_base,
        image=args.image,
        output=args.output,
        attempts=args.attempts,
    )
    return run_local(request, settings)


def _show(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.show import show

    return show(args.output, steps=not args.no_steps)


def _jobs(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.jobs_report import print_jobs

    return print_jobs(settings, as_json=args.json, limit=args.limit)


def _usage(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.usage_report import GROUPINGS, print_usage

    by = [part.strip() for part in args.by.split(",") if part.strip()]
    if unknown := [name for name in by if name not in GROUPINGS]:
        print(f"mini-fix usage: --by takes {', '.join(GROUPINGS)}, not {', '.join(unknown)}", file=sys.stderr)
        return 2
    return print_usage(settings, by=by, days=args.days, installation=args.installation, as_json=args.json)


def _eval(settings: Settings, args: argparse.Namespace) -> int:
    from bot.eval.cli import main as eval_main

    return eval_main(args.eval_args, settings)


def _export(settings: Settings, args: argparse.Namespace) -> int:
    from bot.eval.export_command import run_export

    return run_export(args, settings)


def _setup(settings: Settings, args: argparse.Namespace) -> int:
    from bot.web.setup import SetupError, SetupFlow, install_url, serve

    flow = SetupFlow(settings, f"http://127.0.0.1:{args.port}/callback", args.env_file, org=args.org)
    try:
        flow.check_files()
    except SetupError as exc:
        print(f"mini-fix setup: {exc}", file=sys.stderr)
        return 2
    server, done = serve(flow, args.port)
    print(f"Open http://127.0.0.1:{args.port}/ in a browser on this machine to create the GitHub App.")
    try:
        done.wait()
    finally:
        server.shutdown()
    assert flow.result is not None
    print(f"Saved the App's id, private key and webhook secret to {args.env_file} (mode 0600).")
    print(f"Install it on your repositories: {install_url(flow.result)}")
    return 0


COMMANDS = {
    "setup": _setup,
    "serve": _serve,
    "worker": _worker,
    "run": _run,
    "show": _show,
    "jobs": _jobs,
    "usage": _usage,
    "eval": _eval,
    "export": _export,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `mini-fix` console script."""
    from bot.logs import configure_logging

    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if args.command == "eval":  # `mini-fix eval --help` and the like belong to eval's own parser
        args.eval_args = [*unknown, *args.eval_args]
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        settings = load_settings()
        configure_logging(settings.log_level, settings.log_format, settings.secrets)
        return COMMANDS[args.command](settings, args)
    except (SettingsError, AgentConfigError) as exc:  # a configuration mistake: one message, exit 2, no traceback
        print(f"mini-fix: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
