"""Flags `mini-fix run` and `mini-fix eval` share: the agent config, the model and its server, the sandbox image."""

from __future__ import annotations

import argparse

IMAGE_HELP = (
    "sandbox image, over the repository's (a task's) `image:`, the agent config's `environment.image` and "
    "MINIFIX_SANDBOX_IMAGE: the same in `mini-fix run` and `mini-fix eval` (bot/pipeline/runconfig.py)"
)


def add_agent_flags(parser: argparse.ArgumentParser) -> None:
    """`--config/-c` (as mini-swe-agent's `-c`), `--model`, `--api-base` and `--image`."""
    parser.add_argument(
        "--config",
        "-c",
        action="append",
        default=[],
        help="agent config: a YAML file or key.path=value, repeatable, merged in order; given at all, it replaces "
        "prompts/agent.yaml (as mini-swe-agent's -c: `-c prompts/agent.yaml -c agent.step_limit=20` layers on ours)",
    )
    parser.add_argument("--model", help="litellm model name, e.g. hosted_vllm/<served-model>")
    parser.add_argument("--api-base", help="OpenAI-compatible API base, e.g. http://localhost:8000/v1")
    parser.add_argument("--image", help=IMAGE_HELP)
