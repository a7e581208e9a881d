"""Dropped tests however a project declares them: Rust test macros, Go subtests and table rows, pytest parametrize
cases and JavaScript `.each` rows, each read from realistic test files before and after a change (the worker's own
trees, nothing run). A removed test or case is dropped; one the scanners cannot name is "cannot tell"; adding tests
to an existing file, or extending one, is neither."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

from bot.pipeline.candidates import DroppedTests
from bot.pipeline.judge import trees
from bot.pipeline.judge.dropped import dropped_tests
from bot.repo_config.schema import RepoConfig
from tests.support.buggy_repos import build
from tests.support.candidates import CALC, candidate

GLOBS = [*RepoConfig().test_paths, "*_test.go", "test/**", "tests/**"]
_runs = itertools.count()


def check(tmp_path: Path, path: str, before: str, after: str | None, *more: tuple[str, str | None]) -> DroppedTests:
    """What the dropped-tests check finds when a change rewrites `path` (from `before` to `after`) and `more`."""
    n = next(_runs)
    base = build(replace(CALC, files={**CALC.files, path: before}), tmp_path / f"calc-{n}")
    change = candidate(base, n, (path, after), *more).change
    assert change is not None
    where = tmp_path / f"after-{n}"
    trees.base_tree(base, where)
    trees.apply(where, change.diff)
    return dropped_tests(base, where, change.paths, GLOBS)


def clean(found: DroppedTests) -> bool:
    return found.tests == found.uncertain == found.unparsed == found.unchecked == []


# --- Rust: xmlparser's tests/integration/doctype.rs, its tests made by `test!` from main.rs ---------------------

DOCTYPE = """use crate::token::*;

test!(dtd_01, "<!DOCTYPE greeting SYSTEM \\"greeting.dtd\\">",
    Token::EmptyDtd("greeting", Some(ExternalId::System("greeting.dtd")), 0..42)
);

test!(dtd_02, "<!DOCTYPE greeting PUBLIC \\"-//W3C//DTD XHTML 1.0//EN\\" \\"greeting.dtd\\">",
    Token::EmptyDtd("greeting", Some(ExternalId::Public("-//W3C//DTD XHTML 1.0//EN", "greeting.dtd")), 0..73)
);

test!(dtd_03, "<!DOCTYPE greeting []>",
    Token::DtdStart("greeting", None, 0..19),
    Token::DtdEnd(19..21)
);

#[test]
fn dtd_err_01() {
    let mut p = xml::Tokenizer::from("<!DOCTYPEEG[<!ENTITY%ETT\\u{000a}SSSSSSSS<D_IDYT;->\\u{000a}<");
    assert_eq!(p.next().unwrap().unwrap_err().to_string(), "invalid DTD at 1:1 cause expected space not 'E' at 1:10");
}
"""
MAIN = """extern crate xmlparser as xml;

#[macro_use] mod token;

mod doctype;

macro_rules! test {
    ($name:ident, $text:expr, $($token:expr),*) => (
        #[test]
        fn $name() {
            let mut p = xml::Tokenizer::from($text);
            $(
                let t = p.next().unwrap();
                assert_eq!(to_test_token(t), $token);
            )*
            assert!(p.next().is_none());
        }
    )
}

fuzz_cases! {
    "<!DOCTYPE>",
    "<?xml version='1.0'?>",
}
"""


def test_a_rust_test_written_as_a_macro_invocation_is_dropped_when_removed(tmp_path: Path) -> None:
    path = "tests/integration/doctype.rs"
    start, end = DOCTYPE.index("test!(dtd_03"), DOCTYPE.index("#[test]")
    found = check(tmp_path, path, DOCTYPE, DOCTYPE[:start] + DOCTYPE[end:])
    assert found.tests == [f"{path}::dtd_03"] and found.uncertain == []


def test_a_rust_macro_test_file_extended_or_reformatted_drops_nothing(tmp_path: Path) -> None:
    path = "tests/integration/doctype.rs"
    added = '\ntest!(dtd_04, "<!DOCTYPE greeting [<!ELEMENT greeting (#PCDATA)>]>",\n    Token::DtdEnd(47..49)\n);\n'
    reformatted = DOCTYPE.replace("0..19),\n    Token", "0..19), Token") + added
    assert clean(check(tmp_path, path, DOCTYPE, reformatted))


def test_a_rust_macro_test_whose_expectation_changes_is_kept_but_one_that_asserts_nothing_is_dropped(
    tmp_path: Path,
) -> None:
    path = "tests/integration/doctype.rs"
    assert clean(check(tmp_path, path, DOCTYPE, DOCTYPE.replace("0..42", "0..41")))  # a fix's new expectation
    emptied = DOCTYPE.replace('    assert_eq!(p.next().unwrap().unwrap_err().to_string(), "invalid', '    // ("invalid')
    assert check(tmp_path, path, DOCTYPE, emptied).tests == [f"{path}::dtd_err_01"]


def test_a_rust_test_macro_of_unknown_shape_or_its_generator_changed_cannot_be_told(tmp_path: Path) -> None:
    path = "tests/integration/main.rs"
    without = MAIN[: MAIN.index("fuzz_cases!")]
    found = check(tmp_path, path, MAIN, without)
    assert found.tests == [] and found.uncertain == [
        f'{path}::fuzz_cases!{{ "<!DOCTYPE>", "<?xml version=\'1.0\'?>", }}'
    ]
    weakened = MAIN.replace("assert_eq!(to_test_token(t), $token);", "let _ = (t, $token);")
    found = check(tmp_path, path, MAIN, weakened)
    assert found.tests == [] and [name.split(" (")[0] for name in found.uncertain] == [f"{path}::macro_rules! test"]


LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

macro_rules! check {
    ($name:ident, $a:expr, $b:expr, $sum:expr) => {
        #[test]
        fn $name() {
            assert_eq!(add($a, $b), $sum);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    check!(adds_small, 1, 2, 3);
    check!(adds_negative, -1, -2, -3);

    #[test]
    fn adds_zero() {
        assert_eq!(add(0, 0), 0);
    }
}
"""


def test_a_macro_test_in_a_cfg_test_module_is_dropped_and_macros_elsewhere_are_not_tests(tmp_path: Path) -> None:
    found = check(tmp_path, "src/lib.rs", LIB, LIB.replace("    check!(adds_negative, -1, -2, -3);\n", ""))
    assert found.tests == ["src/lib.rs::adds_negative"] and found.uncertain == []
    # outside `#[cfg(test)]` and outside tests/, a macro invocation declares nothing the App checks
    outside = LIB.replace("#[cfg(test)]\nmod tests {", "mod helpers {")
    assert clean(
        check(tmp_path, "src/lib.rs", outside, outside.replace("    check!(adds_negative, -1, -2, -3);\n", ""))
    )


CASES = """use rstest::rstest;
use test_case::test_case;

#[rstest]
#[case(0, 0)]
#[case::one(1, 1)]
#[case(10, 55)]
fn fibonacci_test(#[case] input: u32, #[case] expected: u32) {
    assert_eq!(expected, fibonacci(input))
}

#[test_case(-2, -4 ; "when both operands are negative")]
#[test_case(4,  2)]
fn multiplication_tests(x: i8, y: i8) {
    assert_eq!(8, (x * y).abs())
}
"""


def test_rstest_and_test_case_cases_are_dropped_when_removed_and_a_doubt_when_edited(tmp_path: Path) -> None:
    path = "tests/fib.rs"
    removed = CASES.replace("#[case::one(1, 1)]\n", "").replace("#[case(10, 55)]\n", "")
    removed = removed.replace('#[test_case(-2, -4 ; "when both operands are negative")]\n', "")
    found = check(tmp_path, path, CASES, removed)
    assert found.tests == [
        f"{path}::fibonacci_test[10, 55]",
        f"{path}::fibonacci_test[one]",
        f"{path}::multiplication_tests[when both operands are negative]",
    ]
    found = check(tmp_path, path, CASES, CASES.replace("#[test_case(4,  2)]", "#[test_case(4, 3)]"))
    assert found.tests == [] and found.uncertain == [f"{path}::multiplication_tests[4, 2]"]
    added = CASES.replace("#[case(0, 0)]\n", "#[case(0, 0)]\n#[case(2, 1)]\n")
    assert clean(check(tmp_path, path, CASES, added))


def test_a_helper_after_a_test_making_macro_is_not_taken_for_a_test(tmp_path: Path) -> None:
    helper = "\nfn to_test_token(t: u8) -> u8 {\n    t\n}\n"
    found = check(tmp_path, "tests/integration/main.rs", MAIN + helper, MAIN)
    assert clean(found)


# --- Go: table-driven tests and subtests -----------------------------------------------------------------------

FLAGS = """package pflag

import (
	"fmt"
	"testing"
)

var boolCases = []struct {
	name     string
	input    string
	expected bool
}{
	{name: "true", input: "true", expected: true},
	{name: "false", input: "false", expected: false},
}

func TestParseBool(t *testing.T) {
	for _, tc := range boolCases {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := parseBool(tc.input); got != tc.expected {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		name  string
		input []string
		want  int
	}{
		{name: "none", input: []string{}, want: 0},
		{name: "twice", input: []string{"-v", "-v"}, want: 2},
		{name: "thrice", input: []string{"-vvv"}, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := count(tt.input); got != tt.want {
				t.Fatalf("count(%v) = %d", tt.input, got)
			}
		})
	}
	t.Run("negative", func(t *testing.T) {
		if count([]string{"--v=-1"}) != -1 {
			t.Fatal("negative")
		}
	})
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"a,b", 2},
		{"a", 1},
	} {
		t.Run(c.in, func(t *testing.T) {
			if len(split(c.in)) != c.want {
				t.Error(c.in)
			}
		})
	}
	for i := 0; i < 3; i++ {
		t.Run(fmt.Sprintf("empty-%d", i), func(t *testing.T) {})
	}
}
"""


def test_go_table_entries_and_literal_subtests_are_dropped_by_name(tmp_path: Path) -> None:
    path = "flag_test.go"
    after = FLAGS.replace('\t\t{name: "twice", input: []string{"-v", "-v"}, want: 2},\n', "")
    after = after.replace('\t{name: "false", input: "false", expected: false},\n', "")
    start, end = after.index('\tt.Run("negative"'), after.index("}\n\nfunc TestSplit")
    found = check(tmp_path, path, FLAGS, after[:start] + after[end:])
    assert found.tests == [f"{path}::TestCount/negative", f"{path}::TestCount/twice", f"{path}::TestParseBool/false"]
    assert found.uncertain == []


def test_go_table_extended_or_edited_in_place_drops_nothing_and_a_removed_test_is_named_once(tmp_path: Path) -> None:
    path = "flag_test.go"
    extended = FLAGS.replace("want: 3},\n", 'want: 3},\n\t\t{name: "mixed", input: []string{"-v", "-vv"}, want: 3},\n')
    extended = extended.replace('{"a", 1},\n', '{"a", 1},\n\t\t{"", 0},\n').replace("want: 0}", "want: 0 }")
    assert clean(check(tmp_path, path, FLAGS, extended))
    start, end = FLAGS.index("func TestCount"), FLAGS.index("func TestSplit")
    found = check(tmp_path, path, FLAGS, FLAGS[:start] + FLAGS[end:])
    assert found.tests == [f"{path}::TestCount"]  # not each of its cases again


def test_go_positional_rows_removed_are_dropped_edited_cannot_be_told(tmp_path: Path) -> None:
    path = "flag_test.go"
    found = check(tmp_path, path, FLAGS, FLAGS.replace('\t\t{"a", 1},\n', ""))
    assert found.tests == [f'{path}::TestSplit[{{"a", 1}}]'] and found.uncertain == []
    found = check(tmp_path, path, FLAGS, FLAGS.replace('{"a", 1}', '{"a", 0}'))
    assert found.tests == [] and found.uncertain == [f'{path}::TestSplit[{{"a", 1}}]']
    computed = 'TestSplit/(fmt.Sprintf("empty-%d", i), func(t *testing.T) {})'
    found = check(tmp_path, path, FLAGS, FLAGS.replace('fmt.Sprintf("empty-%d", i)', "fmt.Sprint(i)"))
    assert found.tests == [] and found.uncertain == [f"{path}::{computed}"]


# --- Python: pytest parametrize ---------------------------------------------------------------------------------

SEMVER = """import pytest

from semver import Version, compare

VALID = [
    "1.0.0",
    "1.2.3-rc.1+build.5",
]


@pytest.mark.parametrize(
    "left,right,expected",
    [
        ("1.0.0", "2.0.0", -1),
        ("2.0.0", "1.0.0", 1),
        pytest.param("1.0.0", "1.0.0", 0, id="equal"),
    ],
)
def test_should_compare(left, right, expected):
    assert compare(left, right) == expected


@pytest.mark.parametrize("version", VALID)
def test_should_parse(version):
    assert Version.parse(version)


@pytest.mark.parametrize("version", [f"1.{n}.0" for n in range(3)])
def test_should_parse_generated(version):
    assert Version.parse(version)
"""


def test_removed_parametrize_cases_are_dropped_with_their_test_or_id(tmp_path: Path) -> None:
    path = "tests/test_compare.py"
    after = SEMVER.replace('        ("2.0.0", "1.0.0", 1),\n', "").replace('    "1.2.3-rc.1+build.5",\n', "")
    after = after.replace('        pytest.param("1.0.0", "1.0.0", 0, id="equal"),\n', "")
    found = check(tmp_path, path, SEMVER, after)
    assert found.tests == [
        f"{path}::test_should_compare[('2.0.0', '1.0.0', 1)]",
        f"{path}::test_should_compare[equal]",
        f"{path}::test_should_parse['1.2.3-rc.1+build.5']",
    ]
    assert found.uncertain == []


def test_parametrize_cases_added_keep_everything_and_an_edited_one_cannot_be_told(tmp_path: Path) -> None:
    path = "tests/test_compare.py"
    added = SEMVER.replace(
        '        ("2.0.0", "1.0.0", 1),\n', '        ("2.0.0", "1.0.0", 1),\n        ("1.0.0", "1.0.1", -1),\n'
    )
    added += "\n\ndef test_issue_123():\n    assert compare('1.0.0-rc.1', '1.0.0') == -1\n"
    assert clean(check(tmp_path, path, SEMVER, added))
    found = check(tmp_path, path, SEMVER, SEMVER.replace('("2.0.0", "1.0.0", 1)', '("2.0.0", "1.0.0", 0)'))
    assert found.tests == [] and found.uncertain == [f"{path}::test_should_compare[('2.0.0', '1.0.0', 1)]"]
    generated = SEMVER.replace("range(3)", "range(1)")
    found = check(tmp_path, path, SEMVER, generated)
    assert found.tests == [] and found.uncertain == [
        f"{path}::test_should_parse_generated[[f'1.{{n}}.0' for n in range(3)]]"
    ]


# --- JavaScript: `.each` tables ----------------------------------------------------------------------------------

BIG = """const Big = require('../big');

describe('plus', () => {
  it.each([
    ['1', '1', '2'],
    ['0.1', '0.2', '0.3'],
    ['-1', '1', '0'],
  ])('%s + %s = %s', (a, b, sum) => {
    expect(new Big(a).plus(b).toString()).toBe(sum);
  });

  test.each`
    a        | b       | expected
    ${'1e3'} | ${'1'}  | ${'1001'}
    ${'2'}   | ${'-2'} | ${'0'}
  `('$a plus $b is $expected', ({ a, b, expected }) => {
    expect(new Big(a).plus(b).toString()).toBe(expected);
  });

  for (const [a, b] of [['1', '2']]) {
    it(`commutes for ${a} and ${b}`, () => {
      expect(new Big(a).plus(b).eq(new Big(b).plus(a))).toBe(true);
    });
  }
});
"""


def test_removed_each_rows_are_dropped(tmp_path: Path) -> None:
    path = "test/plus.test.js"
    after = BIG.replace("    ['0.1', '0.2', '0.3'],\n", "").replace("    ${'2'}   | ${'-2'} | ${'0'}\n", "")
    found = check(tmp_path, path, BIG, after)
    assert found.tests == [
        f"{path}::$a plus $b is $expected[${{'2'}} | ${{'-2'}} | ${{'0'}}]",
        f"{path}::%s + %s = %s[['0.1', '0.2', '0.3']]",
    ]
    assert found.uncertain == []


def test_each_rows_added_keep_everything_edited_or_computed_names_cannot_be_told(tmp_path: Path) -> None:
    path = "test/plus.test.js"
    added = BIG.replace("    ['-1', '1', '0'],\n", "    ['-1', '1', '0'],\n    ['1e-7', '1e-7', '2e-7'],\n")
    added = added.replace("${'1001'}\n", "${'1001'}\n    ${'0'}   | ${'0'}  | ${'0'}\n")
    assert clean(check(tmp_path, path, BIG, added))
    found = check(tmp_path, path, BIG, BIG.replace("['-1', '1', '0']", "['-1', '1', '1']"))
    assert found.tests == [] and found.uncertain == [f"{path}::%s + %s = %s[['-1', '1', '0']]"]
    found = check(tmp_path, path, BIG, BIG.replace(".toBe(true)", ".toBeDefined()"))
    assert found.tests == [] and len(found.uncertain) == 1
    assert found.uncertain[0].startswith(f"{path}::it(`commutes for ${{a}} and ${{b}}`")


def test_an_existing_python_test_extended_in_place_is_kept_and_one_left_without_assertions_is_dropped(
    tmp_path: Path,
) -> None:
    path = "tests/test_compare.py"
    extended = SEMVER.replace(
        "    assert compare(left, right) == expected\n",
        "    assert compare(left, right) == expected\n    assert compare(right, left) == -expected\n",
    )
    assert clean(check(tmp_path, path, SEMVER, extended))
    weakened = SEMVER.replace("    assert compare(left, right) == expected\n", "    compare(left, right)\n")
    assert check(tmp_path, path, SEMVER, weakened).tests == [f"{path}::test_should_compare"]


# --- Java: JUnit 5 parameterized tests --------------------------------------------------------------------------

JUNIT = """package calc;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class CalcTest {
    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5, -3})
    void odd(int n) {
        assertTrue(Calc.isOdd(n));
    }

    @ParameterizedTest(name = "{0} + {1} = {2}")
    @CsvSource({
        "1, 1, 2",
        "2, 3, 5",
    })
    void sums(int a, int b, int sum) {
        assertEquals(sum, Calc.add(a, b));
    }

    @ParameterizedTest
    @MethodSource("pairs")
    void commutes(int a, int b) {
        assertEquals(Calc.add(a, b), Calc.add(b, a));
    }
}
"""


def test_junit_value_and_csv_source_cases_are_dropped_edited_or_elsewhere_cannot_be_told(tmp_path: Path) -> None:
    path = "src/test/java/calc/CalcTest.java"
    found = check(tmp_path, path, JUNIT, JUNIT.replace("{1, 3, 5, -3}", "{1, 3, 5}").replace('"2, 3, 5",\n', ""))
    assert found.tests == [f"{path}::odd[-3]", f'{path}::sums["2, 3, 5"]'] and found.uncertain == []
    found = check(tmp_path, path, JUNIT, JUNIT.replace('"2, 3, 5"', '"2, 3, 6"').replace('"pairs"', '"some"'))
    assert found.tests == [] and found.uncertain == [
        f'{path}::commutes[@MethodSource("pairs")]',
        f'{path}::sums["2, 3, 5"]',
    ]
    assert clean(check(tmp_path, path, JUNIT, JUNIT.replace("{1, 3, 5, -3}", "{1, 3, 5, -3, 7}")))
