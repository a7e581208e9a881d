"""`mini-fix run --attempts 2` with no `setup:` on real projects whose dependencies come from a registry mirror the
tier starts itself (tests/support/registry_mirror.py): real releases from Debian's source packages, served as the
ecosystem's own registry on a private address that only the operator's settings open to the setup proxy
(MINIFIX_SETUP_UPSTREAM_NETWORK, MINIFIX_SETUP_ALLOWED_HOSTS, MINIFIX_SETUP_MIRROR_ADDRESSES) and that the
toolchain is pointed at by MINIFIX_SETUP_ENV, as an operator with a company Artifactory or Nexus would.

- Go: cpuguy83/go-md2man v2.0.2, which needs russross/blackfriday/v2 v2.1.0 (go.sum pins its h1: hash; the
  module zip built here from Debian's tarball must match it, and Go checks that itself). GOPROXY in
  MINIFIX_SETUP_ENV.
- Rust: roxmltree 0.16.0, which needs xmlparser 0.13.5, both as Debian's librust-*-dev ship the published crates
  (the crates' .orig tarballs are not in the pool this machine reaches); a sparse registry whose index carries the
  sha256 of the .crate packed here (no Cargo.lock pins crates.io's). MINIFIX_SETUP_CARGO_MIRROR.
- Java: a small Maven project needing commons-collections4 4.2 (not in the image's Debian repository; its jar and
  pom from Debian's libcommons-collections4-java) and junit 4 (the image's). MINIFIX_SETUP_MAVEN_MIRROR.

Each case: the setup is inferred and cached (the second run restores it), the runner's own count is above 0 after
the fix, the attempt that deletes a test is never proposed, and with the mirror down the setup fails and the
tests read "could not run the tests".

Needs Docker, the sandbox and proxy images, and deb.debian.org (first run; the sources are cached after).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from tests.support.model_server import ScriptedModelServer, bash_reply
from tests.support.registry_mirror import (
    MirrorServer,
    add_crate,
    add_go_module,
    add_maven_artifact,
    cargo_registry_config,
    deb_tree,
    debian_binary,
    debian_source,
    unpack,
)  # fmt: skip
from tests.support.tiers import setup_failed

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
IMAGE = os.environ.get("MINIFIX_REALREPOS_IMAGE", "mini-fix-sandbox:latest")
SUBMIT = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nFixed it.\\n'")
TIER = "real repositories (mirrored registries)"


@dataclass(frozen=True)
class Case:
    project: Callable[[Path], Path]  # the project's release tree, unpacked under the given folder
    bug: tuple[str, str, str]  # file, text, the text that breaks it
    fix: str  # the command that fixes the bug
    drop: str  # the command that deletes an existing test
    dropped: str  # that test's name
    setup: str  # the inferred setup
    why: str  # where it was inferred from
    counted: str  # the runner's own count of what passed, as a regex with one group
    failed_before: str  # its count of failed tests before the fix, as a regex with one group
    mirror: Callable[[Path, Path, str], dict[str, str]]  # fills the mirror's root (at this address): the settings
    not_run: str  # what the tests say when the setup could not fetch the dependencies


def _go_mirror(root: Path, work: Path, address: str) -> dict[str, str]:
    src = unpack(debian_source("golang-blackfriday-v2", "golang-blackfriday-v2_2.1.0.orig.tar.gz"), work / "bf")
    h1 = add_go_module(root / "go", "github.com/russross/blackfriday/v2", "v2.1.0", src)
    assert h1 == "h1:JIOH55/0cWyOuilr9/qlrm0BSXldqnqwMsf35Ld67mk=", h1  # go-md2man's go.sum, checked here too
    return {"MINIFIX_SETUP_ENV": json.dumps({"GOPROXY": f"http://{address}/go"})}


def _crate(package: str, deb: str, crate: str, where: Path) -> Path:
    """A crate's files as Debian's librust-*-dev ships them (the published crate, its Cargo.toml normalized)."""
    return deb_tree(debian_binary(package, deb), where, f"/usr/share/cargo/registry/{crate}")


def _cargo_mirror(root: Path, work: Path, address: str) -> dict[str, str]:
    src = _crate("rust-xmlparser", "librust-xmlparser-dev_0.13.5-1_amd64.deb", "xmlparser-0.13.5", work / "xp")
    add_crate(root / "cargo", src)
    cargo_registry_config(root / "cargo", f"http://{address}/cargo")
    return {"MINIFIX_SETUP_CARGO_MIRROR": f"sparse+http://{address}/cargo/"}


def _roxmltree(where: Path) -> Path:
    tree = _crate("rust-roxmltree", "librust-roxmltree-dev_0.16.0-1_amd64.deb", "roxmltree-0.16.0", where)
    for name in (".cargo-checksum.json", ".cargo_vcs_info.json"):  # Debian's and the packager's, not the project's
        (tree / name).unlink()
    return tree


GO = Case(
    project=lambda where: unpack(debian_source("go-md2man-v2", "go-md2man-v2_2.0.2+ds1.orig.tar.xz"), where),
    bug=("md2man/roff.go", 'linkCloseTag     = "\\\\[ra]"', 'linkCloseTag     = "\\\\[rb]"'),
    fix="sed -i 's/\\[rb\\]/[ra]/' md2man/roff.go",
    drop="sed -i '/^func TestEscapeCharacters/,/^}/d' md2man/roff_test.go",
    dropped="TestEscapeCharacters",
    setup="`go mod download`",
    why="inferred from go.mod",
    counted=r"(\d+) packages? ok",
    failed_before=r"\(\d+ tests passed, (\d+) failed\)",
    mirror=_go_mirror,
    not_run="the Go module `github.com/russross/blackfriday/v2@v2.1.0` is not downloaded",
)
RUST = Case(
    project=_roxmltree,
    bug=(
        "src/lib.rs",
        ".any(|a| a.data.name.as_expanded_name(self.doc) == name)",
        ".any(|a| a.data.name.as_expanded_name(self.doc) != name)",
    ),
    fix="sed -i 's/(self.doc) != name)/(self.doc) == name)/' src/lib.rs",
    drop="perl -0pi -e 's/#\\[test\\]\\nfn get_pi\\(\\) \\{.*?\\n\\}\\n//s' tests/api.rs",
    dropped="get_pi",
    setup="`cargo fetch`",
    why="inferred from Cargo.toml",
    counted=r"(\d+) passed; 0 failed",
    failed_before=r"\d+ passed; (\d+) failed",
    mirror=_cargo_mirror,
    not_run="the Rust dependency `xmlparser` is not available",
)


def _maven_mirror(root: Path, work: Path, address: str) -> dict[str, str]:
    deb = debian_binary("libcommons-collections4-java", "libcommons-collections4-java_4.2-1_all.deb")
    add_maven_artifact(root / "maven", deb_tree(deb, work / "cc4", "/usr/share/maven-repo"), *COLLECTIONS4)
    return {"MINIFIX_SETUP_MAVEN_MIRROR": f"http://{address}/maven"}


COLLECTIONS4 = ("org.apache.commons", "commons-collections4", "4.2")  # not in the image's Debian repository
TALLY = {
    "pom.xml": """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>tally</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.apache.commons</groupId>
      <artifactId>commons-collections4</artifactId>
      <version>4.2</version>
    </dependency>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.13.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
</project>
""",
    "src/main/java/calc/Tally.java": """package calc;

import java.util.List;
import org.apache.commons.collections4.bag.HashBag;

public final class Tally {
    private Tally() {}

    /** How many times `word` occurs in `words`. */
    public static int count(List<String> words, String word) {
        return new HashBag<>(words).getCount(word);
    }

    /** How many different words there are. */
    public static int distinct(List<String> words) {
        return new HashBag<>(words).uniqueSet().size();
    }
}
""",
    "src/test/java/calc/TallyTest.java": """package calc;

import static org.junit.Assert.assertEquals;

import java.util.List;
import org.junit.Test;

public class TallyTest {
    @Test
    public void countsAWord() {
        assertEquals(2, Tally.count(List.of("a", "b", "a"), "a"));
    }

    @Test
    public void countsDistinctWords() {
        assertEquals(2, Tally.distinct(List.of("a", "b", "a")));
    }
}
""",
}


def _tally(where: Path) -> Path:
    for name, text in TALLY.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


JAVA = Case(
    project=_tally,
    bug=("src/main/java/calc/Tally.java", "getCount(word);", "getCount(word) + 1;"),
    fix="sed -i 's/getCount(word) + 1;/getCount(word);/' src/main/java/calc/Tally.java",
    drop="perl -0pi -e 's/\\n    \\@Test\\n    public void countsDistinctWords.*?\\n    \\}\\n//s' "
    "src/test/java/calc/TallyTest.java",
    dropped="countsDistinctWords",
    setup="`mvn -B -q test-compile -Dmaven.main.skip=true -Dmaven.test.skip=true`",
    why="inferred from pom.xml",
    counted=r"Tests run: (\d+), Failures and errors: 0",
    failed_before=r"Tests run: \d+, Failures and errors: (\d+)",
    mirror=_maven_mirror,
    not_run="Maven could not resolve a dependency",
)
CASES = [
    pytest.param(GO, id="go-goproxy"),
    pytest.param(RUST, id="rust-sparse-registry"),
    pytest.param(JAVA, id="maven-mirror"),
]


@pytest.fixture(scope="module")
def ready() -> None:
    try:
        client = docker.from_env()
        for image in (IMAGE, "mini-fix-proxy:latest"):
            client.images.get(image)
    except Exception as exc:
        setup_failed(TIER, f"{IMAGE} and the proxy image are needed: {exc}")


@pytest.fixture
def mirrored(
    ready: None, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[MirrorServer, dict[str, str]]]:
    case: Case = request.param
    root = tmp_path / "mirror"
    root.mkdir()
    try:
        server = MirrorServer(root).__enter__()
    except (OSError, RuntimeError, docker.errors.DockerException) as exc:
        setup_failed(TIER, f"the mirror server could not start: {exc}")
    try:
        try:
            settings = case.mirror(root, tmp_path / "sources", server.address)
        except (OSError, subprocess.CalledProcessError) as exc:
            setup_failed(TIER, f"the mirror could not be built from Debian's packages: {exc}")
        yield server, settings, case
    finally:
        server.close()


def _repo(where: Path, case: Case) -> Path:
    shutil.copytree(case.project(where.parent / "project"), where)
    path, good, bad = case.bug
    text = (where / path).read_text()
    assert good in text, f"{path} no longer holds {good!r}"
    (where / path).write_text(text.replace(good, bad, 1))
    who = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(where), *who, *args], check=True, capture_output=True)
    return where


def _run(
    repo: Path, out: Path, data: Path, case: Case, mirror: MirrorServer, settings: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    scripts = {
        0.0: [bash_reply(f"{case.fix} && {case.drop}"), SUBMIT],  # fixes it and deletes a test
        0.7: [bash_reply(case.fix), SUBMIT],
    }
    env = {
        **os.environ, "MINIFIX_DATA_DIR": str(data), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MINIFIX_SANDBOX_IMAGE": IMAGE, "MINIFIX_SETUP_UPSTREAM_NETWORK": mirror.network,
        "MINIFIX_SETUP_ALLOWED_HOSTS": mirror.address, "MINIFIX_SETUP_MIRROR_ADDRESSES": mirror.address,
        **settings,
    }  # fmt: skip
    cmd = [sys.executable, "-m", "bot.cli", "run", "--repo", str(repo), "--task", "the output is wrong"]
    with ScriptedModelServer([], by_temperature=scripts) as model:
        cmd += ["--model", "hosted_vllm/scripted", "--api-base", model.api_base, "--output", str(out)]
        return subprocess.run([*cmd, "--attempts", "2"], capture_output=True, text=True, env=env, timeout=1500)


@pytest.mark.parametrize("mirrored", CASES, indirect=True)
def test_setup_from_the_mirror_is_inferred_cached_and_the_tests_really_run(
    mirrored: tuple[MirrorServer, dict[str, str], Case], tmp_path: Path
) -> None:
    mirror, settings, case = mirrored
    repo, data = _repo(tmp_path / "repo", case), tmp_path / "data"
    first = _run(repo, tmp_path / "out1", data, case, mirror, settings)
    report = first.stdout + first.stderr
    assert first.returncode == 0, report
    assert f"setup: {case.setup} ({case.why})" in first.stdout, report
    assert re.search(r"^setup: ran in \d+ s", first.stdout, re.MULTILINE), report
    _chosen_kept_the_tests(tmp_path / "out1", case)
    second = _run(repo, tmp_path / "out2", data, case, mirror, settings)
    report = second.stdout + second.stderr
    assert second.returncode == 0, report
    assert re.search(r"^setup: restored from cache in \d+ s", second.stdout, re.MULTILINE), report
    assert not re.search(r"^setup: ran in", second.stdout, re.MULTILINE), report
    _chosen_kept_the_tests(tmp_path / "out2", case)
    print(first.stdout, second.stdout, sep="\n")  # with -s: the setup lines, their times and the verdicts


def _chosen_kept_the_tests(out: Path, case: Case) -> None:
    chosen = json.loads((out / "trajectory.json").read_text())["mini_fix"]
    test = chosen["test"]
    assert chosen["attempt"] == 2 and test["passed"] is True, test
    count = re.search(case.counted, test["summary"])
    assert count and int(count.group(1)) > 0, test  # the runner's own count: its tests ran
    assert case.dropped in (out / "attempts.md").read_text()
    # The deleting attempt changed the test file: its reproduction ran the tests before the fix, and they failed.
    (deleting,) = [p for p in out.glob("*-1/trajectory.json")]
    before = json.loads(deleting.read_text())["mini_fix"]["reproduction"]["before_verdict"]
    failed = re.search(case.failed_before, before)
    assert before.startswith("failed") and failed and int(failed.group(1)) > 0, before


@pytest.mark.parametrize("mirrored", CASES, indirect=True)
def test_with_the_mirror_down_the_setup_fails_and_the_tests_could_not_run(
    mirrored: tuple[MirrorServer, dict[str, str], Case], tmp_path: Path
) -> None:
    mirror, settings, case = mirrored
    mirror.stop()  # the network stays: the proxy joins it and finds nothing there
    repo = _repo(tmp_path / "repo", case)
    result = _run(repo, tmp_path / "out", tmp_path / "data", case, mirror, settings)
    report = result.stdout + result.stderr
    assert re.search(r"^setup: \*\*failed\*\* after \d+ s, so the tests may not run: ", result.stdout, re.M), report
    tests = [json.loads(p.read_text())["mini_fix"].get("test") for p in (tmp_path / "out").glob("*/trajectory.json")]
    assert tests and all(t and t.get("verdict") == "could not run" for t in tests), tests
    assert all(case.not_run in t["summary"] for t in tests), tests
    print(result.stdout)  # with -s: the failed setup and the verdicts
