"""Scanners for the tests Go, Rust, Java and JavaScript files define, and their bodies
(bot/pipeline/judge/test_scanners/ over bot/pipeline/judge/code_blocks.py)."""

from __future__ import annotations

import pytest

from bot.pipeline.judge.pyscan import CASE, TEST, UNKNOWN, TestMap
from bot.pipeline.judge.test_scanners import MAX_BYTES, scan
from bot.pipeline.judge.test_scanners.common import MAX_LINE
from bot.pipeline.judge.test_scanners.go import go_tests
from bot.pipeline.judge.test_scanners.java import java_tests
from bot.pipeline.judge.test_scanners.javascript import js_tests
from bot.pipeline.judge.test_scanners.rust import rust_tests


def test_go_finds_top_level_test_functions_only() -> None:
    text = "func TestA(t *testing.T) {}\nfunc helper() {}\n  func TestIndented() {}\nfunc BenchmarkX(b *B) {}\n"
    assert set(go_tests(text)) == {"TestA"}


def test_rust_finds_functions_after_a_test_attribute() -> None:
    text = (
        "#[test]\nfn plain() {}\n#[tokio::test]\nasync fn spawned() {}\n"
        "#[test]\n#[should_panic]\npub fn panics() {}\nfn helper() {}\n#[cfg(test)]\nmod tests {}\n"
        '#[test] fn inline() {}\n#[tokio::test(flavor = "multi_thread")] async fn flavoured() {}\n'
    )
    assert set(rust_tests(text)) == {"plain", "spawned", "panics", "inline", "flavoured"}


def test_java_finds_junit_test_methods() -> None:
    text = "@Test\npublic void one() {}\n@Test void two() {}\nvoid helper() {}\n"
    text += "@org.junit.jupiter.api.Test\nvoid three(){}\n"
    assert set(java_tests(text)) == {"one", "two", "three"}


def test_js_finds_literal_names_whatever_the_framework() -> None:
    text = (
        "test('adds', t => {});\nit(\"mul\", () => {});\ntest.only(`div`, () => {});\n"
        "it(`with ${x}`, () => {});\nsubmit('no');\nobj.test('no');\ntest(name, () => {});\n"
    )
    found = js_tests(text)
    assert found is not None
    assert {name for name, body in found.items() if body.kind == TEST} == {"adds", "mul", "div"}
    # the computed name cannot be named: the call is a declaration of unknown shape, known by its source
    assert {name for name, body in found.items() if body.kind == UNKNOWN} == {"it(`with ${x}`, () => {})"}


def test_oversized_files_and_lines_are_not_read() -> None:
    assert scan("a_test.go", b"func TestA() {}\n" + b" " * MAX_BYTES) is None
    found = scan("a_test.go", b"func TestA(" + b"x" * MAX_LINE + b"\nfunc TestB() {}\n")
    assert found is not None and set(found) == {"TestB"}
    assert scan("notes.txt", b"test('x')") is None


# One test per language, written three ways: as it was, reformatted with a comment (the same tokens), and emptied.
BODIES = {
    "go": (
        'func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatalf("add {%d}", Add(2, 3))\n\t}\n}\n',
        'func TestAdd(t *testing.T) {\n\t// still the same\n\tif Add(2,3)!=5 { t.Fatalf("add {%d}", Add(2,3)) }\n}\n',
        "func TestAdd(t *testing.T) {\n}\n",
    ),
    "rust": (
        "#[test]\nfn add() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
        "#[test]\nfn add() { /* same */ assert_eq!(calc::add(2, 3),\n 5); }\n",
        "#[test]\nfn add() {}\n",
    ),
    "java": (
        "  @Test\n  public void add() {\n    assertEquals(5, Calc.add(2, 3));\n  }\n",
        "  @Test public void add() { assertEquals(5, Calc.add(2,\n 3)); } // same\n",
        "  @Test\n  public void add() {\n  }\n",
    ),
    "javascript": (
        "test('add', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n",
        "test('add', () => { assert.strictEqual(add(2, 3), 5); /* same */ });\n",
        "test('add', () => {});\n",
    ),
}
SCANNERS = {"go": go_tests, "rust": rust_tests, "java": java_tests, "javascript": js_tests}
NAMES = {"go": "TestAdd", "rust": "add", "java": "add", "javascript": "add"}


@pytest.mark.parametrize("language", list(BODIES))
def test_a_body_is_fingerprinted_by_its_tokens_and_an_emptied_one_is_trivial(language: str) -> None:
    scanner, name = SCANNERS[language], NAMES[language]
    [original, reformatted, emptied] = (scanner(text)[name] for text in BODIES[language])
    assert original.fingerprint == reformatted.fingerprint
    assert original.asserts and not original.trivial
    assert emptied.trivial and not emptied.asserts and emptied.fingerprint != original.fingerprint


@pytest.mark.parametrize(
    ("scanner", "text", "name"),
    [
        (go_tests, "func TestA(t *testing.T) {\n\tAdd(2, 3) // t.Fatal(\n}\n", "TestA"),
        (go_tests, 'func TestA(t *testing.T) {\n\t_ = "t.Errorf("\n}\n', "TestA"),
        (rust_tests, '#[test]\nfn a() {\n    let _ = r#"assert!(x)"#;\n}\n', "a"),
        (java_tests, '@Test void a() {\n  String s = """\n    assertEquals(1, 1);\n    """;\n}\n', "a"),
        (js_tests, "test('a', () => { const s = `expect(${x})`; f(/assert/); });\n", "a"),
    ],
    ids=["go-comment", "go-string", "rust-raw-string", "java-text-block", "js-template-and-regex"],
)
def test_an_assertion_in_a_comment_or_a_literal_is_not_one(scanner: object, text: str, name: str) -> None:
    body = scanner(text)[name]  # type: ignore[operator]
    assert not body.asserts and not body.trivial


@pytest.mark.parametrize(
    ("scanner", "text", "name"),
    [
        (go_tests, "func TestA(tt *testing.T) {\n\ttt.Error(1)\n}\n", "TestA"),
        (go_tests, "func TestA(t *testing.T) {\n\trequire.Equal(t, 1, f())\n}\n", "TestA"),
        (rust_tests, "#[test]\nfn a() {\n    f().unwrap();\n}\n", "a"),
        (rust_tests, "#[test]\n#[should_panic]\nfn a() {\n    f(-1);\n}\n", "a"),
        (java_tests, "@Test(expected = IllegalStateException.class)\nvoid a() { f(); }\n", "a"),
        (java_tests, "@Test void a() { Assertions.assertThrows(X.class, () -> f()); }\n", "a"),
        (java_tests, '@Test void a() { fail("never"); }\n', "a"),
        (js_tests, "it('a', () => expect(f()).toBe(1));\n", "a"),
        (js_tests, "test('a', (t) => { t.equal(f(), 1); t.end(); });\n", "a"),
    ],
)
def test_assertion_like_calls_per_language(scanner: object, text: str, name: str) -> None:
    assert scanner(text)[name].asserts  # type: ignore[operator]


def test_braces_in_strings_comments_and_literals_do_not_end_a_body() -> None:
    go = "func TestA(t *testing.T) {\n\ts := \"}\"\n\tr := '}'\n\tu := `\n}`\n\t/* } */\n\tt.Fatal(s, r, u)\n}\n"
    rust = '#[test]\nfn a() {\n    let s = "}";\n    let c = \'}\';\n    let r = r#"}"#;\n'
    rust += "    fn f<'a>(x: &'a str) {}\n    assert!(s.len() > 0);\n}\n"
    js = "test('a', () => { const s = `}${ {k: '}'}.k }`; const r = /[}]/; expect(s).toMatch(r); });\n"
    for found in (go_tests(go)["TestA"], rust_tests(rust)["a"], js_tests(js)["a"]):
        assert found.asserts and not found.trivial  # the assertion comes after every brace in a literal


@pytest.mark.parametrize(
    "callback",
    ["", ", () => {}", ", function () {}", ", async (t) => {}", ", done => {}", ", { timeout: 5 }, () => {}"],
)
def test_a_js_test_with_no_callback_or_an_empty_one_is_trivial(callback: str) -> None:
    assert js_tests(f"test('a'{callback});\n")["a"].trivial


@pytest.mark.parametrize("callback", [", () => f()", ", helper", ", () => { f(); }", ", function () { return 1 }"])
def test_a_js_test_that_does_something_is_not_trivial(callback: str) -> None:
    assert not js_tests(f"test('a'{callback});\n")["a"].trivial


def test_nested_tests_each_get_their_own_body() -> None:
    text = "describe('ops', () => {\n  it('adds', () => { expect(1).toBe(1); });\n  it('muls', () => {});\n});\n"
    found: TestMap = js_tests(text)
    assert found["adds"].asserts and found["muls"].trivial and not found["muls"].asserts


def test_go_rows_are_read_only_from_a_table_a_test_runs_by_a_field() -> None:
    text = (
        "func TestMap(t *testing.T) {\n\tgrid := [][]int{\n\t\t{1, 2},\n\t}\n"
        '\tfor name, c := range map[string][]int{"a": {1}} {\n\t\tt.Run(name, func(t *testing.T) { _ = c })\n\t}\n}\n'
        "func TestRows(t *testing.T) {\n\tfor _, c := range []struct{ in, want int }{\n\t\t{1, 2},\n\t} {\n"
        "\t\tt.Run(fmt.Sprint(c.in), func(t *testing.T) {})\n\t}\n\tt.Run(c.in, f)\n}\n"
    )
    found = go_tests(text)
    assert found is not None
    assert {name: body.kind for name, body in found.items() if body.parent} == {
        "TestMap/a": TEST,  # a map entry run by its key
        "TestRows[{1, 2}]": CASE,  # a row of the table run by `c.in`
        "TestRows/(fmt.Sprint(c.in), func(t *testing.T) {})": UNKNOWN,
    }
