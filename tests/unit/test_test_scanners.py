"""Line scanners for the tests Go, Rust, Java and JavaScript files define (bot/pipeline/test_scanners.py)."""

from __future__ import annotations

from bot.pipeline.test_scanners import MAX_BYTES, MAX_LINE, dropped, go_tests, java_tests, js_tests, rust_tests, scan


def test_go_finds_top_level_test_functions_only() -> None:
    text = "func TestA(t *testing.T) {}\nfunc helper() {}\n  func TestIndented() {}\nfunc BenchmarkX(b *B) {}\n"
    assert go_tests(text) == {"TestA"}


def test_rust_finds_functions_after_a_test_attribute() -> None:
    text = (
        "#[test]\nfn plain() {}\n#[tokio::test]\nasync fn spawned() {}\n"
        "#[test]\n#[should_panic]\npub fn panics() {}\nfn helper() {}\n#[cfg(test)]\nmod tests {}\n"
    )
    assert rust_tests(text) == {"plain", "spawned", "panics"}


def test_java_finds_junit_test_methods() -> None:
    text = "@Test\npublic void one() {}\n@Test void two() {}\nvoid helper() {}\n"
    text += "@org.junit.jupiter.api.Test\nvoid three(){}\n"
    assert java_tests(text) == {"one", "two", "three"}


def test_js_finds_literal_names_whatever_the_framework() -> None:
    text = (
        "test('adds', t => {});\nit(\"mul\", () => {});\ntest.only(`div`, () => {});\n"
        "it(`with ${x}`, () => {});\nsubmit('no');\nobj.test('no');\ntest(name, () => {});\n"
    )
    assert js_tests(text) == {"adds", "mul", "div"}


def test_oversized_files_and_lines_are_not_read() -> None:
    assert scan("a_test.go", b"func TestA() {}\n" + b" " * MAX_BYTES) is None
    assert scan("a_test.go", b"func TestA(" + b"x" * MAX_LINE + b"\nfunc TestB() {}\n") == {"TestB"}
    assert scan("notes.txt", b"test('x')") is None


def test_dropped_counts_a_deleted_file_and_cannot_tell_about_an_oversized_one() -> None:
    base = b"func TestA() {}\nfunc TestB() {}\n"
    assert dropped("a_test.go", base, lambda _p: None, ["a_test.go"]) == ["TestA", "TestB"]
    assert dropped("a_test.go", None, lambda _p: b"", ["a_test.go"]) is None
