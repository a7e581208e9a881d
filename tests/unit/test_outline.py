"""The repository's layout in the agent's first message: two levels named, deeper directories counted, capped."""

from __future__ import annotations

from bot.pipeline.task.outline import outline


def test_two_levels_are_named_and_deeper_directories_counted() -> None:
    paths = ["setup.py", "README.md", "src/app.py", "src/pkg/a.py", "src/pkg/b.py", "src/pkg/sub/c.py", "tests/t.py"]
    assert outline(paths).splitlines() == [
        "README.md",
        "setup.py",
        "src/app.py",
        "src/pkg/ (3 files)",
        "tests/t.py",
    ]


def test_a_large_repository_is_capped_with_a_count_of_the_rest() -> None:
    paths = [f"m{i:02}.py" for i in range(40)]
    lines = outline(paths, limit=30).splitlines()
    assert len(lines) == 31 and lines[-1] == "... and 10 more entries" and lines[0] == "m00.py"


def test_one_file_deep_down_is_said_in_the_singular() -> None:
    assert outline(["a/b/c/d.go"]) == "a/b/ (1 file)"
