"""`mini-fix run --attempts 2` on a small JavaScript, Go, Rust, Java and Python repository (made here, no
network), in the real polyglot sandbox, with a scripted model: one attempt fixes the bug and deletes an existing
test, the other fixes it and keeps every test. The App infers the test command, names it in the first message,
runs the tests itself and proposes the attempt that keeps them. The Java project is an ordinary Maven one (JUnit 5,
no plugin versions): the image's Maven settings read Debian's repository offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.repo_config.infer import MAVEN_TEST
from tests.support.model_server import ScriptedModelServer, bash_reply

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
SUBMIT = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nFixed add.\\n'")


@dataclass(frozen=True)
class Fixture:
    files: dict[str, str]
    source: str  # the file with the bug: `a - b` where `a + b` is meant
    test_file: str
    dropped_test: str  # the existing test the first attempt deletes
    delete: str  # the sed expression that deletes it
    command: str  # the inferred test command
    why: str
    dropped_as: str = ""  # how the App names the dropped test (default: `dropped_test`)


GO = Fixture(
    files={
        "go.mod": "module calc\n\ngo 1.19\n",
        "calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n\n"
        "func Mul(a, b int) int { return a * b }\n",
        "calc_test.go": 'package calc\n\nimport "testing"\n\n'
        'func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("add")\n\t}\n}\n\n'
        'func TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal("mul")\n\t}\n}\n',
    },
    source="calc.go",
    test_file="calc_test.go",
    dropped_test="TestMul",
    delete="/func TestMul/,$d",
    command="go test ./...",
    why="inferred from go.mod",
)
RUST = Fixture(
    files={
        "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n"
        "pub fn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n",
        "tests/lib.rs": "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n\n"
        "#[test]\nfn muls() {\n    assert_eq!(calc::mul(2, 3), 6);\n}\n",
    },
    source="src/lib.rs",
    test_file="tests/lib.rs",
    dropped_test="muls",
    delete="/^$/,$d",
    command="cargo test --offline",
    why="inferred from Cargo.toml",
)
# xmlparser's way: tests made by a `macro_rules!` of the test file, one invocation each (`test!(dtd_03, …)`).
RUST_MACROS = Fixture(
    files={
        "Cargo.toml": RUST.files["Cargo.toml"],
        "src/lib.rs": RUST.files["src/lib.rs"],
        "tests/lib.rs": "macro_rules! check {\n    ($name:ident, $got:expr, $want:expr) => {\n        #[test]\n"
        "        fn $name() {\n            assert_eq!($got, $want);\n        }\n    };\n}\n\n"
        "check!(adds, calc::add(2, 3), 5);\ncheck!(muls, calc::mul(2, 3), 6);\n",
    },
    source="src/lib.rs",
    test_file="tests/lib.rs",
    dropped_test="muls",
    delete="/check!(muls/d",
    command="cargo test --offline",
    why="inferred from Cargo.toml",
)
JS = Fixture(
    files={
        "package.json": '{"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}}\n',
        "calc.js": "exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n",
        "test/calc.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { add, mul } = require('../calc');\n\n"
        "test('adds', () => assert.strictEqual(add(2, 3), 5));\n"
        "test('muls', () => assert.strictEqual(mul(2, 3), 6));\n",
    },
    source="calc.js",
    test_file="test/calc.test.js",
    dropped_test="muls",
    delete="/muls/d",
    command="npm test",
    why="package.json `scripts.test`",
)
JAVA = Fixture(
    files={
        "pom.xml": """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>calc</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>5.9.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
</project>
""",
        "src/main/java/calc/Calc.java": "package calc;\n\npublic class Calc {\n"
        "    public static int add(int a, int b) { return a - b; }\n\n"
        "    public static int mul(int a, int b) { return a * b; }\n}\n",
        "src/test/java/calc/CalcTest.java": "package calc;\n\n"
        "import static org.junit.jupiter.api.Assertions.assertEquals;\n\nimport org.junit.jupiter.api.Test;\n\n"
        "class CalcTest {\n    @Test\n    void adds() {\n        assertEquals(5, Calc.add(2, 3));\n    }\n\n"
        "    @Test void muls() { assertEquals(6, Calc.mul(2, 3)); }\n}\n",
    },
    source="src/main/java/calc/Calc.java",
    test_file="src/test/java/calc/CalcTest.java",
    dropped_test="muls",
    delete="/void muls/d",
    command=MAVEN_TEST,
    why="inferred from pom.xml",
)
PYTHON = Fixture(
    files={
        "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        "test_calc.py": "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
    },
    source="calc.py",
    test_file="test_calc.py",
    dropped_test="test_mul",
    delete="/def test_mul/,$d",
    command="python3 -m unittest discover -t . -s .",
    why="so the standard library's unittest",
    dropped_as="CalcTest::test_mul",
)


def _git(repo: Path, *args: str) -> None:
    who = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "-C", str(repo), *who, *args], check=True, capture_output=True, text=True)


def _repo(where: Path, fixture: Fixture) -> Path:
    for name, text in fixture.files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    _git(where, "init", "-q", "-b", "main")
    _git(where, "add", "-A")
    _git(where, "commit", "-qm", "init")
    return where


def _run(repo: Path, out: Path, api_base: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINIFIX_DATA_DIR": str(out.parent / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cmd = [sys.executable, "-m", "bot.cli", "run", "--repo", str(repo), "--task", "add(2, 3) returns -1"]
    cmd += ["--model", "hosted_vllm/scripted", "--api-base", api_base, "--output", str(out), "--attempts", "2"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.parametrize(
    "fixture",
    [JS, GO, RUST, RUST_MACROS, JAVA, PYTHON],
    ids=["javascript", "go", "rust", "rust-macros", "java", "python"],
)
def test_the_attempt_that_keeps_the_tests_is_proposed(fixture: Fixture, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", fixture)
    fix = f"sed -i 's/a - b/a + b/' {fixture.source}"
    scripts = {
        0.0: [bash_reply(f"{fix} && sed -i '{fixture.delete}' {fixture.test_file}"), SUBMIT],  # drops a test
        0.7: [bash_reply(fix), SUBMIT],
    }
    out = tmp_path / "out"
    with ScriptedModelServer([], by_temperature=scripts) as model:
        result = _run(repo, out, model.api_base)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert f"tests: `{fixture.command}` (" in result.stdout and fixture.why in result.stdout
    first = model.requests[0]["messages"][1]["content"]
    assert f"The repository's tests run with `{fixture.command}`" in first
    assert "unittest" not in first or fixture is PYTHON
    [dropping, keeping] = sorted(p for p in out.iterdir() if p.is_dir())
    assert f"-{fixture.dropped_test}" not in (keeping / "patch.diff").read_text()
    assert fixture.dropped_test in (dropping / "patch.diff").read_text()
    assert (out / "patch.diff").read_text() == (keeping / "patch.diff").read_text()
    chosen = json.loads((out / "trajectory.json").read_text())["mini_fix"]
    assert chosen["attempt"] == 2
    assert chosen["test"]["command"] == fixture.command and chosen["test"]["passed"] is True, chosen["test"]
    table = (out / "attempts.md").read_text()
    assert f"{fixture.test_file}::{fixture.dropped_as or fixture.dropped_test}" in table, table
    print(first, table, sep="\n")  # with -s: the task's test instructions and the attempts table
