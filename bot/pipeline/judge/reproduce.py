"""An attempt's reproduction test: which of its files are tests, and the command that runs just those tests.

The command is a template (`reproduce` in `.github/mini-fix.yml`, else inferred: `bot/repo_config/runners.py`)
whose placeholders are filled here with values the host took from its own diff and checked itself, each
shell-quoted: the test files, their Go packages, their Java classes, and the test functions the change adds
(Go's `func TestX(`, Rust's `#[test] fn x` and `test!(x, ...)` macros).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable

from bot.repo_config import runners
from bot.repo_config.schema import RepoConfig

FILES = "{files}"
MAX_NAMES = 50  # test names put in one command
_PLACEHOLDER = re.compile(r"\{(?:files|packages|pattern|names|classes)\}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,100}\Z")
_CLASS = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,100}\Z")
_GO_TEST = re.compile(r"^\+func ((?:Test|Fuzz)[A-Za-z0-9_]{0,100})\(")
_RUST_ATTR = re.compile(r"^\+\s{0,40}#\[(?:[\w:]{0,60}::)?test\b")
_RUST_FN = re.compile(
    r"^\+\s{0,40}(?:pub(?:\(\w{1,10}\))? )?(?:async )?(?:unsafe )?fn ([A-Za-z_][A-Za-z0-9_]{0,100})\b"
)
_RUST_MACRO = re.compile(r"^\+\s{0,40}\w{0,40}test\w{0,40}!\s{0,4}[(\[{]\s{0,4}([A-Za-z_][A-Za-z0-9_]{0,100})\s{0,4},")


def matches(path: str, globs: Iterable[str]) -> bool:
    """Whether `path` matches one of the `test_paths` globs: one without a `/` matches the file name at any
    depth, one with a `/` the whole path (`**/` also matches no directory at all)."""
    for glob in globs:
        if "/" not in glob:
            if fnmatch.fnmatchcase(posixpath.basename(path), glob):
                return True
        elif fnmatch.fnmatchcase(path, glob) or (glob.startswith("**/") and fnmatch.fnmatchcase(path, glob[3:])):
            return True
    return False


def test_files(paths: Iterable[str], globs: Iterable[str], present: Callable[[str], bool]) -> list[str]:
    """The change's test files: paths matching the globs that are regular files after the change (not deleted)."""
    globs = list(globs)
    return sorted({p for p in paths if matches(p, globs) and present(p)})


def template(repo: RepoConfig) -> tuple[str | None, str]:
    """The reproduce command template and, when there is none, why, in a reviewer's words. `reproduce` when set
    (`infer.resolve` sets it from the language where the repository did not), else inferred from `test`."""
    if repo.reproduce:  # without placeholders it runs a package or the whole suite (`npm test`)
        return repo.reproduce, ""
    if not repo.test:
        return None, "no reproduction check: the repository sets neither `reproduce` nor `test` in .github/mini-fix.yml"
    inferred = infer(repo.test)
    if inferred is None:
        return None, (
            "no reproduction check: the test files could not be run on their own with the repository's `test` "
            "command in a language mini-fix knows; set `reproduce` (e.g. `python3 -m pytest -q {files}`, "
            "`go test {packages} -run {pattern}`, `npx jest {files}`) in .github/mini-fix.yml"
        )
    return inferred, ""


def infer(test: str) -> str | None:
    """The reproduce template for a test command that names its runner (`runners.from_command`); None for anything
    else (a shell pipeline, make, tox, `npm test`)."""
    return runners.from_command(test)


def command(template: str, files: list[str], names: Iterable[str] = ()) -> str:
    """`template` with its placeholders filled, each value shell-quoted, in one pass (a path holding `{names}` is
    not filled again): `{files}` the paths, `{packages}` their Go packages, `{classes}` their Java classes,
    `{names}` the test functions added, `{pattern}` a `go test -run` pattern for them (`.` when there are none)."""
    names = [n for n in dict.fromkeys(names) if _IDENT.match(n)][:MAX_NAMES]
    values = {
        "{files}": " ".join(shlex.quote(f) for f in files),
        "{packages}": " ".join(shlex.quote(p) for p in packages(files)),
        "{classes}": shlex.quote(",".join(classes(files))),
        "{names}": " ".join(shlex.quote(n) for n in names),
        "{pattern}": shlex.quote(f"^({'|'.join(names)})$" if names else "."),
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(0)], template)


def runnable(template: str, files: list[str]) -> list[str]:
    """The files given to the command: those of the language its runner runs (`.py` for pytest, `_test.go` for
    go test, Java classes for Maven, ...), else all (a command without placeholders gets none, but the test files
    are still laid on the base commit)."""
    kind = runners.kind(template)
    if kind is None or not _PLACEHOLDER.search(template):  # a whole-suite command takes no files: all are laid
        return files
    found = [f for f in files if f.endswith(runners.EXTENSIONS[kind])]
    if kind == "java":
        found = [f for f in found if _CLASS.match(_stem(f))]
    return found


def packages(files: Iterable[str]) -> list[str]:
    """The directories of the files as Go package patterns: `./pkg/sub`, `.` for the top."""
    dirs = dict.fromkeys(posixpath.dirname(f) for f in files)
    return [f"./{d}" if d else "." for d in dirs]


def classes(files: Iterable[str]) -> list[str]:
    """The Java (or Kotlin) class names of the files, from their names."""
    return list(dict.fromkeys(s for s in map(_stem, files) if _CLASS.match(s)))


def added_tests(diff: str, files: Iterable[str]) -> list[str]:
    """The test functions a unified diff adds to `files`, by name: Go's `func TestX(` and `func FuzzX(`, Rust's
    functions under a `#[test]` (or `#[tokio::test]`, ...) attribute and `test!(name, ...)` macro calls."""
    wanted, found = set(files), []
    current, pending = None, False
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            current = path[2:] if path.startswith("b/") else None
            pending = False
            continue
        if current not in wanted or not line.startswith("+"):
            continue
        line = line[:400]
        if current.endswith(".go"):
            if match := _GO_TEST.match(line):
                found.append(match.group(1))
        elif current.endswith(".rs"):
            if _RUST_ATTR.match(line):
                pending = True
            elif pending and (match := _RUST_FN.match(line)):
                found.append(match.group(1))
                pending = False
            elif match := _RUST_MACRO.match(line):
                found.append(match.group(1))
    return list(dict.fromkeys(found))


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]
