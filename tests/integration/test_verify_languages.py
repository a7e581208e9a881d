"""The reproduction check in every language, in real sandboxes: a fix that extends an existing test file with a new
test is valid (its new test fails on the base commit and passes with the fix), a change that only adds the test is
not, and the repository's tests read "passed" from the runner's own summary. The reproduce command comes from the
language (`infer.resolve`), also when `.github/mini-fix.yml` sets `test`."""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from bot.pipeline.candidates import Candidate
from bot.pipeline.change import compute_change
from bot.pipeline.judge.verify import verify
from bot.repo_config.infer import resolve
from bot.repo_config.schema import RepoConfig
from sandbox.base import Sandbox, SandboxConfig
from sandbox.docker import DockerSandbox
from tests.integration.conftest import small_config

pytestmark = pytest.mark.docker


@dataclass(frozen=True)
class Project:
    files: dict[str, str]  # the base commit: `add` subtracts
    source: str
    test_file: str
    new_test: str  # appended to `test_file` by both attempts
    command: str  # the reproduce command verify runs (the files and names filled in)
    configured: str | None = None  # a `test` set in .github/mini-fix.yml


GO = Project(
    files={
        "go.mod": "module calc\n\ngo 1.19\n",
        "calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n\n"
        "func Mul(a, b int) int { return a * b }\n",
        "calc/calc_test.go": 'package calc\n\nimport "testing"\n\n'
        'func TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal("mul")\n\t}\n}\n',
    },
    source="calc/calc.go",
    test_file="calc/calc_test.go",
    new_test='\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("add")\n\t}\n}\n',
    command="go test ./calc -run '^(TestAdd)$'",
    configured="go test ./...",  # the case: the inferred command itself, set in the config
)
RUST = Project(
    files={
        "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
        "tests/lib.rs": "macro_rules! test {\n    ($name:ident, $a:expr, $b:expr, $sum:expr) => {\n"
        "        #[test]\n        fn $name() {\n            assert_eq!(calc::add($a, $b), $sum);\n        }\n"
        "    };\n}\n\ntest!(zeros, 0, 0, 0);\n",
    },
    source="src/lib.rs",
    test_file="tests/lib.rs",
    new_test="test!(two_and_three, 2, 3, 5);\n",  # a macro test, as xmlparser's
    command="cargo test --offline -- two_and_three",
)
NODE = Project(
    files={
        "package.json": '{"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}}\n',
        "index.js": "exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n",
        "test/calc.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { add, mul } = require('../index.js');\n\ntest('muls', () => assert.strictEqual(mul(2, 3), 6));\n",
    },
    source="index.js",
    test_file="test/calc.test.js",
    new_test="test('adds', () => assert.strictEqual(add(2, 3), 5));\n",
    command="node --test test/calc.test.js",
    configured="npm test",
)
JAVA = Project(
    files={
        "pom.xml": '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
        "  <groupId>calc</groupId><artifactId>calc</artifactId><version>1.0</version>\n"
        "  <properties><maven.compiler.source>17</maven.compiler.source>"
        "<maven.compiler.target>17</maven.compiler.target></properties>\n"
        "  <dependencies><dependency><groupId>junit</groupId><artifactId>junit</artifactId>"
        "<version>4.13.2</version><scope>test</scope></dependency></dependencies>\n</project>\n",
        "src/main/java/calc/Calc.java": "package calc;\n\npublic class Calc {\n"
        "    public static int add(int a, int b) { return a - b; }\n}\n",
        "src/test/java/calc/CalcTest.java": "package calc;\n\nimport static org.junit.Assert.assertEquals;\n"
        "import org.junit.Test;\n\npublic class CalcTest {\n"
        "    @Test public void zeros() { assertEquals(0, Calc.add(0, 0)); }\n}\n",
    },
    source="src/main/java/calc/Calc.java",
    test_file="src/test/java/calc/CalcTest.java",
    new_test="",  # set below: a method inside the class
    command="mvn -o -B test -Dtest=CalcTest -DfailIfNoTests=false -Dsurefire.failIfNoSpecifiedTests=false",
)


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)


def _base(project: Project, where: Path) -> Path:
    base = where / "base"
    for name, text in project.files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    _git(base, "init", "-q", "-b", "main")
    _git(base, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(base, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
    return base


def _extended(project: Project, text: str) -> str:
    if project is JAVA:
        return text.replace("\n}\n", "\n    @Test public void adds() { assertEquals(5, Calc.add(2, 3)); }\n}\n")
    return text + project.new_test


def _candidate(project: Project, base: Path, index: int, *, fix: bool) -> Candidate:
    tree = base.parent / f"attempt-{index}"
    subprocess.run(["cp", "-r", str(base), str(tree)], check=True)
    subprocess.run(["rm", "-rf", str(tree / ".git")], check=True)
    test = tree / project.test_file
    test.write_text(_extended(project, test.read_text()))
    if fix:
        source = tree / project.source
        source.write_text(source.read_text().replace("a - b", "a + b"))
    return Candidate(index=index, run_id=f"run-{index}", exit_status="Submitted", change=compute_change(base, tree))


@pytest.mark.parametrize("project", [GO, RUST, NODE, JAVA], ids=["go", "rust", "node", "java"])
def test_a_new_test_in_an_existing_file_reproduces_the_bug_in_every_language(
    project: Project, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    base = _base(project, tmp_path)
    repo, _ = resolve(RepoConfig(test=project.configured) if project.configured else RepoConfig(), base)
    fixed = _candidate(project, base, 1, fix=True)
    unfixed = _candidate(project, base, 2, fix=False)

    def factory(config: SandboxConfig, run_id: str) -> Sandbox:
        return DockerSandbox.start(config, run_id, client=docker_client, labels={"mini-fix.test": "verify-lang"})

    verdicts = verify(
        [fixed, unfixed],
        checkout=base,
        factory=factory,
        sandbox_config=small_config(memory="1g", pids_limit=512, timeout=240),
        repo=repo,
        run_id="verify-lang",
        workdir=tmp_path,
        cancel=threading.Event(),
    )
    fixed, unfixed = (c.judged(verdicts.get(c.index)) for c in (fixed, unfixed))
    rep = fixed.reproduction
    assert rep is not None and rep.command == project.command, rep
    assert rep.valid, (rep.detail, rep.before[-800:], rep.after[-800:])
    assert rep.before_verdict.startswith("failed") and rep.after_verdict.startswith("passed"), rep
    assert unfixed.reproduction is not None and unfixed.reproduction.fails_before is True
    assert unfixed.reproduction.passes_after is False
    assert fixed.test is not None and fixed.test["verdict"] == "passed", fixed.test
    assert unfixed.test is not None and unfixed.test["verdict"] == "failed", unfixed.test
    assert not docker_client.containers.list(all=True, filters={"label": "mini-fix.test=verify-lang"})
