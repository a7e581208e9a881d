"""Maven offline in the polyglot sandbox: an ordinary pom that pins versions Debian lacks (JUnit 4.12, surefire
3.2.5, compiler 3.11.0) resolves them to Debian's through the image's aliases, and `clean` works (plexus-utils
1.1); the tests run, and a failing one fails the build. A JUnit 5 project importing `org.junit:junit-bom:5.8.2`
(a version Debian lacks; an unresolvable import POM broke real projects) resolves it offline too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>calc</artifactId>
  <version>1.0</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.12</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.11.0</version>
        <configuration><release>17</release></configuration>
      </plugin>
    </plugins>
  </build>
</project>
"""
TEST = """package calc;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class CalcTest {
    @Test
    public void adds() {
        assertEquals(5, Calc.add(2, 3));
    }
}
"""


BOM_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>calc5</artifactId>
  <version>1.0</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <maven.compiler.release>17</maven.compiler.release>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.junit</groupId>
        <artifactId>junit-bom</artifactId>
        <version>5.8.2</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.0.0</version>
      </plugin>
    </plugins>
  </build>
</project>
"""
TEST5 = """package calc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void adds() {
        assertEquals(5, Calc.add(2, 3));
    }
}
"""


def _project(where: Path, pom: str = POM, test: str = TEST) -> Path:
    files = {
        "pom.xml": pom,
        "src/main/java/calc/Calc.java": "package calc;\n\npublic class Calc {\n"
        "    public static int add(int a, int b) { return a + b; }\n}\n",
        "src/test/java/calc/CalcTest.java": test,
    }
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


def test_an_ordinary_maven_project_runs_its_junit_tests_offline(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    sandbox = start_sandbox(memory="2g", pids_limit=512, timeout=240, wall_time_seconds=600)
    sandbox.copy_in(_project(tmp_path / "calc"))
    passed = sandbox.execute("mvn -o -q clean test", timeout=240)
    assert passed.returncode == 0, passed.output

    sandbox.execute("sed -i 's/a + b/a - b/' src/main/java/calc/Calc.java")
    failed = sandbox.execute("mvn -o -q test", timeout=240)
    assert failed.returncode != 0
    assert "Tests run: 1, Failures: 1" in failed.output and "maven-surefire-plugin:2.22.3" in failed.output
    assert "\x1b[1;31m" not in failed.output  # Maven's colour codes are stripped


def test_a_junit5_project_importing_the_junit_bom_runs_offline(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    sandbox = start_sandbox(memory="2g", pids_limit=512, timeout=240, wall_time_seconds=600)
    sandbox.copy_in(_project(tmp_path / "calc5", BOM_POM, TEST5))
    passed = sandbox.execute("mvn -o clean test", timeout=240)
    assert passed.returncode == 0, passed.output
    assert "Non-resolvable import POM" not in passed.output
    # file:// repositories have no checksum files: Maven 3.9 would print a stack trace for each artifact
    assert "Could not validate integrity" not in passed.output and "Checksum validation failed" not in passed.output
    assert "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0" in passed.output

    sandbox.execute("sed -i 's/a + b/a - b/' src/main/java/calc/Calc.java")
    failed = sandbox.execute("mvn -o test", timeout=240)
    assert failed.returncode != 0
    assert "Tests run: 1, Failures: 1" in failed.output


def test_surefire_waits_seconds_not_half_a_minute_for_its_forked_jvm(sandbox: DockerSandbox) -> None:
    """Debian's Surefire 2.22 on JDK 21 cannot end its forked test JVM: Surefire kills it after
    `surefire.exitTimeout`, 30 s unless the image's MAVEN_ARGS says otherwise (every `mvn test` paid those 30 s)."""
    args = sandbox.execute('printf "%s" "$MAVEN_ARGS"').output.split()
    [timeout] = [arg.split("=", 1)[1] for arg in args if arg.startswith("-Dsurefire.exitTimeout=")]
    assert 0 < int(timeout) <= 5, args
