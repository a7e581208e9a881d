"""The buggy repositories of buggy_repos.py as `mini-fix eval` tasks, and scripted attempts that differ by temperature.

A task's hidden test is its test_patch (FAIL_TO_PASS); the repository's own tests are PASS_TO_PASS and its `test`.
The scripted attempts give `--attempts` something to choose between: at temperature 0 the fix breaks the tests,
at 0.7 it passes with a large change, at 1.0 it is small and comes with a valid reproduction test.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from tests.support.buggy_repos import REPOS, BuggyRepo, build, git

HIDDEN = "tests/test_hidden_check.py"
REPO_TEST = "python3 -m unittest discover -s tests -t ."


def test_ids(path: str, source: str) -> list[str]:
    """unittest ids (`tests.test_x.Class.test_y`) of the test methods in one file."""
    module = path.removesuffix(".py").replace("/", ".")
    ids = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            ids += [f"{module}.{node.name}.{f.name}" for f in node.body if isinstance(f, ast.FunctionDef)]
    return [i for i in ids if i.rsplit(".", 1)[1].startswith("test")]


def eval_task(repo: BuggyRepo, where: Path) -> dict[str, Any]:
    """Build `repo` under `where` and describe it as one eval task (JSON)."""
    checkout = build(repo, where / repo.name)
    (checkout / HIDDEN).write_text(repo.hidden_test)
    git(checkout, "add", HIDDEN)
    test_patch = git(checkout, "diff", "--cached")
    git(checkout, "rm", "-q", "--cached", HIDDEN)
    (checkout / HIDDEN).unlink()
    existing = [(p, text) for p, text in repo.files.items() if p.startswith("tests/test_")]
    return {
        "instance_id": repo.name,
        "repo": f"bench/{repo.name}",
        "base_commit": git(checkout, "rev-parse", "HEAD").strip(),
        "problem_statement": repo.issue,
        "git": str(checkout),
        "test_patch": test_patch,
        "FAIL_TO_PASS": test_ids(HIDDEN, repo.hidden_test),
        "PASS_TO_PASS": [i for p, text in existing for i in test_ids(p, text)],
        "test": REPO_TEST,
    }


def write_tasks(names: list[str], where: Path) -> Path:
    """A tasks file of the named repositories, built under `where`."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / "tasks.jsonl"
    path.write_text("".join(json.dumps(eval_task(REPOS[n], where / "repos")) + "\n" for n in names))
    return path


# Per task: the fix (one shell command), the source file it edits, and a reproduction test.
FIXES = {
    "calc": ("sed -i 's/return a - b/return a + b/' calc/ops.py", "calc/ops.py"),
    "shout": ('sed -i \'s/text.lower() + "!"/text.upper() + "!"/\' textkit/case.py', "textkit/case.py"),
    "pages": ("sed -i 's/start = number \\* size/start = (number - 1) * size/' pager/core.py", "pager/core.py"),
    "mean": (
        "sed -i 's|return total(values) / len(values)|return total(values) / len(values) if values else 0.0|' "
        "stats/summary.py",
        "stats/summary.py",
    ),
}
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 'Fixed it.'"


def task_of(messages: list[dict[str, Any]]) -> str:
    """Which task a conversation is about (its issue text is in the first user message)."""
    text = next(m["content"] for m in messages if m["role"] == "user")
    return next(name for name, repo in REPOS.items() if repo.issue in text)


def scripted_commands(task: str, temperature: float) -> list[str]:
    """The commands one scripted attempt sends, in order, by its temperature."""
    fix, source = FIXES[task]
    if temperature < 0.5:  # fixes the bug, but breaks the module's import: every test fails
        return [f"{fix} && echo 'import no_such_module' >> {source}", SUBMIT]
    if temperature < 0.85:  # right, but with a large unrelated change
        padding = "".join(f"# note {n}\\n" for n in range(40))
        return [f"{fix} && printf '{padding}' >> {source}", SUBMIT]
    test = REPOS[task].hidden_test.replace("class Hidden", "class Reproduce")
    write = f"cat > tests/test_reproduce_issue.py <<'EOF'\n{test}EOF"
    return [write, "python3 -m unittest tests.test_reproduce_issue", fix, SUBMIT]


def scripted_reply(body: dict[str, Any]) -> str:
    """The next reply of the scripted attempt this request belongs to (for ScriptedModelServer(with_body=True))."""
    messages = body["messages"]
    turn = sum(1 for m in messages if m["role"] == "assistant")
    commands = scripted_commands(task_of(messages), float(body.get("temperature") or 0.0))
    return f"THOUGHT: step {turn + 1}.\n\n```mswea_bash_command\n{commands[min(turn, len(commands) - 1)]}\n```"
