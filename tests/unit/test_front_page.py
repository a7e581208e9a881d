"""Every command README.md and the docs' quick starts show is run here at least as far as its argument parsing (a
`mini-fix` command's agent config loaded too, a script's syntax checked, a pytest selection's paths and markers
found), so a refactor cannot break the front page silently. The demo itself runs end to end in
tests/e2e/test_demo.py."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from bot.agent.config import load_specs
from bot.cli.main import _parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))), "deploy/README.md"]
FENCE = re.compile(r"^[ \t]*```(bash|sh|shell|console|)\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)  # in lists too
INLINE = re.compile(r"`((?:scripts/|\.venv/bin/)[^`]+)`")
PLACEHOLDER = re.compile(r"<[A-Za-z][\w-]*>")
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")
OURS = ("mini-fix", ".venv/bin/mini-fix", ".venv/bin/pytest")


def commands(page: str) -> list[tuple[str, ...]]:
    """The page's shell commands as words: fenced shell blocks (continuations joined, comments dropped, split at
    `&&`, `||`, `;` and `|`, redirections and leading VAR=value assignments left out) and inline `scripts/...` /
    `.venv/bin/...` code spans."""
    text = (ROOT / page).read_text(encoding="utf-8")
    lines = [(lang, line) for lang, block in FENCE.findall(text) for line in block.replace("\\\n", " ").splitlines()]
    lines += [("sh", span) for span in INLINE.findall(text) if " " in span or span.endswith(".sh")]
    found = []
    for lang, line in lines:
        try:
            found += split(PLACEHOLDER.sub("PLACEHOLDER", line))
        except ValueError:  # unbalanced quotes: an error in a shell block, prose in a plain one (a diagram)
            assert not lang, f"{page}: a shell line that does not parse: {line}"
    return found


def split(line: str) -> list[tuple[str, ...]]:
    """One shell line's simple commands, each as its words."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, "#"
    found: list[tuple[str, ...]] = []
    current: list[str] = []
    redirect = False
    for token in lexer:
        if token in ("&&", "||", "|", ";", "&"):
            found.append(tuple(current))
            current = []
        elif token in (">", ">>", "<", "2>", "2>&1"):
            redirect = True
        elif redirect:
            redirect = False
        else:
            current.append(token)
    found.append(tuple(current))
    commands = []
    for words in found:
        words_list = list(words)
        while words_list and ENV.match(words_list[0]):
            words_list.pop(0)
        if words_list:
            commands.append(tuple(words_list))
    return commands


ALL = sorted({(page, command) for page in PAGES for command in commands(page)})
OWN = [(page, command) for page, command in ALL if command[0].startswith(("scripts/", *OURS))]


def test_the_pages_show_our_commands() -> None:
    shown = {command[0] for _, command in OWN}
    assert {"scripts/demo.sh", "scripts/test.sh", "scripts/setup.sh", "scripts/run-app.sh"} <= shown
    assert {".venv/bin/mini-fix", ".venv/bin/pytest"} <= shown


@pytest.mark.parametrize(("page", "command"), OWN, ids=[f"{p}: {' '.join(c)[:60]}" for p, c in OWN])
def test_a_shown_command_parses(page: str, command: tuple[str, ...]) -> None:
    argv = list(command)
    program = argv[0]
    if program.startswith("scripts/"):
        script = ROOT / program
        assert script.is_file(), f"{page} shows {program}, which does not exist"
        assert script.stat().st_mode & 0o111, f"{page} shows {program}, which is not executable"
        checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
        return
    if program.endswith("pytest"):
        _check_pytest(page, argv[1:])
        return
    _check_mini_fix(page, argv[1:])


def _check_mini_fix(page: str, argv: list[str]) -> None:
    parser = _parser()
    try:
        args, unknown = parser.parse_known_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{page}: `mini-fix {' '.join(argv)}` does not parse (exit {exc.code})")
    assert not unknown or args.command == "eval", f"{page}: unknown arguments {unknown}"
    specs = getattr(args, "config", None) or []
    shipped = [spec for spec in specs if "=" in spec or (ROOT / spec).is_file()]
    if shipped and len(shipped) == len(specs):  # every -c is a file the project ships: the config must load
        load_specs([spec if "=" in spec else str(ROOT / spec) for spec in specs])


def _check_pytest(page: str, argv: list[str]) -> None:
    markers = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for i, arg in enumerate(argv):
        if argv[i - 1] == "-m" and i > 0:
            for marker in re.findall(r"[a-z_]+", arg):
                assert marker in ("and", "or", "not") or f'"{marker}:' in markers, f"{page}: unknown marker {marker}"
        elif arg.startswith("tests"):
            assert (ROOT / arg.split("::")[0]).exists(), f"{page}: {arg} does not exist"
