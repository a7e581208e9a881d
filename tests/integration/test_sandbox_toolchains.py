"""The polyglot sandbox's toolchains are recent enough for current projects (Debian trixie's): each prints a
version at or above the minimum, and each builds and tests a tiny project that needs that version, with no
network (the sandbox has none). Maven's offline repository is tested in test_sandbox_maven.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker

# tool -> (command, the version in its output, minimum). The minimums are what current projects ask for: `go 1.22`+
# in go.mod, crates needing Rust 1.80 (LazyLock), npm packages needing Node 20, Java 21 releases.
MINIMUMS: dict[str, tuple[str, str, tuple[int, ...]]] = {
    "go": ("go version", r"go version go(\d+)\.(\d+)", (1, 22)),
    "rustc": ("rustc --version", r"rustc (\d+)\.(\d+)", (1, 80)),
    "cargo": ("cargo --version", r"cargo (\d+)\.(\d+)", (1, 80)),
    "node": ("node --version", r"v(\d+)\.(\d+)", (20, 0)),
    "npm": ("npm --version", r"(\d+)\.(\d+)", (9, 0)),
    "java": ("java -version", r'version "(\d+)', (21,)),
    "javac": ("javac -version", r"javac (\d+)", (21,)),
    "mvn": ("mvn -v", r"Apache Maven (\d+)\.(\d+)", (3, 9)),
    "python3": ("python3 --version", r"Python (\d+)\.(\d+)", (3, 11)),
    "pytest": ("python3 -m pytest --version", r"pytest (\d+)\.(\d+)", (7, 0)),
}


def _write(where: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


@pytest.fixture
def big_sandbox(start_sandbox: Callable[..., DockerSandbox]) -> DockerSandbox:
    """Room for a compiler: rustc, go and javac each want more than the default test limits."""
    return start_sandbox(memory="2g", pids_limit=512, timeout=240, wall_time_seconds=600)


@pytest.mark.parametrize("tool", sorted(MINIMUMS))
def test_each_toolchain_is_at_least_the_minimum(big_sandbox: DockerSandbox, tool: str) -> None:
    command, pattern, minimum = MINIMUMS[tool]
    result = big_sandbox.execute(command)
    assert result.returncode == 0, result.output
    found = re.search(pattern, result.output)
    assert found, f"{command}: no version in {result.output!r}"
    version = tuple(int(part) for part in found.groups())
    assert version >= minimum, f"{command} printed {result.output.strip()!r}; needs {minimum}"


def test_python_makes_a_venv_with_pip_and_runs_pytest(big_sandbox: DockerSandbox, tmp_path: Path) -> None:
    big_sandbox.copy_in(_write(tmp_path / "py", {"test_calc.py": "def test_adds():\n    assert 2 + 3 == 5\n"}))
    ran = big_sandbox.execute("python3 -m pytest -q -p no:cacheprovider")
    assert ran.returncode == 0 and "1 passed" in ran.output, ran.output
    # ~/.venv/bin comes first on every command's PATH once it exists (the inferred setup installs into it).
    venv = big_sandbox.execute("python3 -m venv ~/.venv && python3 -m pip --version")
    assert venv.returncode == 0 and re.search(r"^pip \d+.*/home/agent/\.venv/", venv.output, re.M), venv.output


GO_FILES = {
    "go.mod": "module example.com/calc\n\ngo 1.22\n",
    # range over an int: Go 1.22's, so an older Go cannot build this.
    "calc.go": "package calc\n\nfunc Sum(n int) int {\n\ttotal := 0\n\tfor i := range n {\n\t\ttotal += i + 1\n\t}\n"
    "\treturn total\n}\n",
    "calc_test.go": 'package calc\n\nimport "testing"\n\nfunc TestSum(t *testing.T) {\n'
    '\tif got := Sum(4); got != 10 {\n\t\tt.Fatalf("Sum(4) = %d", got)\n\t}\n}\n',
}


def test_a_go_module_asking_for_go_1_22_builds_and_tests(big_sandbox: DockerSandbox, tmp_path: Path) -> None:
    big_sandbox.copy_in(_write(tmp_path / "go", GO_FILES))
    passed = big_sandbox.execute("go test ./...")
    assert passed.returncode == 0 and re.search(r"^ok\s+example\.com/calc", passed.output, re.M), passed.output
    big_sandbox.execute("sed -i 's/i + 1/i/' calc.go")
    failed = big_sandbox.execute("go test ./...")
    assert failed.returncode != 0 and "Sum(4) = 6" in failed.output, failed.output


CARGO_FILES = {
    "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    # std::sync::LazyLock is Rust 1.80's.
    "src/lib.rs": "use std::sync::LazyLock;\n\nstatic BASE: LazyLock<i32> = LazyLock::new(|| 2);\n\n"
    "pub fn add(a: i32) -> i32 {\n    *BASE + a\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n"
    "    fn adds() {\n        assert_eq!(super::add(3), 5);\n    }\n}\n",
}


def test_a_cargo_crate_builds_and_tests_offline(big_sandbox: DockerSandbox, tmp_path: Path) -> None:
    big_sandbox.copy_in(_write(tmp_path / "rust", CARGO_FILES))
    passed = big_sandbox.execute("cargo test --offline", timeout=240)
    assert passed.returncode == 0 and "test result: ok. 1 passed" in passed.output, passed.output
    big_sandbox.execute("sed -i 's/\\*BASE + a/*BASE - a/' src/lib.rs")
    failed = big_sandbox.execute("cargo test --offline", timeout=240)
    assert failed.returncode != 0 and "test result: FAILED. 0 passed; 1 failed" in failed.output, failed.output


NODE_FILES = {
    "package.json": '{"name": "calc", "version": "1.0.0", "type": "module", "scripts": {"test": "node --test"}}\n',
    "calc.js": "export const add = (a, b) => a + b;\n",
    "test/calc.test.js": "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n"
    "import { add } from '../calc.js';\n\ntest('adds', () => {\n  assert.equal(add(2, 3), 5);\n});\n",
}


def test_npm_test_runs_the_node_test_runner(big_sandbox: DockerSandbox, tmp_path: Path) -> None:
    big_sandbox.copy_in(_write(tmp_path / "node", NODE_FILES))
    passed = big_sandbox.execute("npm test")
    assert passed.returncode == 0 and re.search(r"^# pass 1$", passed.output, re.M), passed.output
    big_sandbox.execute("sed -i 's/a + b/a - b/' calc.js")
    failed = big_sandbox.execute("npm test")
    assert failed.returncode != 0 and re.search(r"^# fail 1$", failed.output, re.M), failed.output
