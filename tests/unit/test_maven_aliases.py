"""sandbox/image/maven-aliases.sh on a fake Debian Maven repository: pinned versions resolve to whatever version
Debian's repository has (any suite), the JUnit BOMs are real BOMs (Maven follows no relocation for an imported
BOM), Debian's own versions and artifacts Debian lacks are left alone, plexus-utils 1.1 is Debian's jar."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "sandbox" / "image" / "maven-aliases.sh"
ALIASES = SCRIPT.with_name("maven-aliases.txt")


def _debian_repo(where: Path, artifacts: dict[str, str]) -> Path:
    """group:artifact -> version, each with Debian's extra `debian` version beside it."""
    for name, version in artifacts.items():
        group, artifact = name.split(":")
        home = where / group.replace(".", "/") / artifact
        for each in (version, "debian"):
            (home / each).mkdir(parents=True)
            (home / each / f"{artifact}-{each}.pom").write_text("<project/>")
    jar = where / "org/codehaus/plexus/plexus-utils" / artifacts["org.codehaus.plexus:plexus-utils"]
    (jar / f"plexus-utils-{jar.name}.jar").write_bytes(b"jar")
    return where


TRIXIE = {
    "junit:junit": "4.13.2",
    "org.junit.jupiter:junit-jupiter": "5.10.3",
    "org.junit.jupiter:junit-jupiter-api": "5.10.3",
    "org.junit.jupiter:junit-jupiter-engine": "5.10.3",
    "org.junit.platform:junit-platform-launcher": "1.10.3",
    "org.apache.maven.plugins:maven-surefire-plugin": "2.22.3",
    "org.apache.maven.plugins:maven-compiler-plugin": "3.13.0",
    "org.codehaus.plexus:plexus-utils": "3.4.2",
}


@pytest.fixture(scope="module")
def aliases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The script's output, made once for the module (each test only reads it); the fake repository beside it."""
    root = tmp_path_factory.mktemp("maven")
    debian = _debian_repo(root / "debian", TRIXIE)
    out = root / "aliases"
    subprocess.run(["sh", str(SCRIPT), str(out), str(ALIASES), str(debian)], check=True, capture_output=True)
    return out


def _pom(root: Path, group: str, artifact: str, version: str) -> ET.Element:
    return ET.parse(root / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.pom").getroot()


def test_pinned_versions_relocate_to_the_version_debian_has(aliases: Path) -> None:
    for group, artifact, pinned, debian in [
        ("junit", "junit", "4.12", "4.13.2"),
        ("org.junit.jupiter", "junit-jupiter-api", "5.8.2", "5.10.3"),
        ("org.junit.jupiter", "junit-jupiter-engine", "5.13.4", "5.10.3"),
        ("org.junit.platform", "junit-platform-launcher", "1.8.2", "1.10.3"),
        ("org.apache.maven.plugins", "maven-compiler-plugin", "3.11.0", "3.13.0"),
        ("org.apache.maven.plugins", "maven-surefire-plugin", "3.2.5", "2.22.3"),
    ]:
        assert _pom(aliases, group, artifact, pinned).findtext("distributionManagement/relocation/version") == debian


def test_debians_own_versions_and_artifacts_it_lacks_get_no_alias(aliases: Path) -> None:
    assert not (aliases / "org/junit/jupiter/junit-jupiter-api/5.10.3").exists()
    assert not (aliases / "org/apache/maven/plugins/maven-compiler-plugin/3.13.0").exists()
    assert not (aliases / "org/junit/vintage").exists()  # not in this fake Debian repository
    assert not (aliases / "org/apache/maven/plugins/maven-jar-plugin").exists()


@pytest.mark.parametrize("version", ["5.4.0", "5.8.2", "5.10.3", "5.13.4"])
def test_the_junit_bom_manages_debians_junit5_artifacts(aliases: Path, version: str) -> None:
    bom = _pom(aliases, "org.junit", "junit-bom", version)
    assert bom.findtext("packaging") == "pom" and bom.find("distributionManagement") is None
    managed = {
        f"{dep.findtext('groupId')}:{dep.findtext('artifactId')}": dep.findtext("version")
        for dep in bom.iterfind("dependencyManagement/dependencies/dependency")
    }
    assert managed == {name: TRIXIE[name] for name in TRIXIE if name.startswith("org.junit.")}


def test_plexus_utils_1_1_is_debians_jar(aliases: Path) -> None:
    jar = aliases / "org/codehaus/plexus/plexus-utils/1.1/plexus-utils-1.1.jar"
    assert jar.resolve() == (aliases.parent / "debian/org/codehaus/plexus/plexus-utils/3.4.2/plexus-utils-3.4.2.jar")
    assert jar.read_bytes() == b"jar"
