"""Tasks for bench/quality.py: small repositories built from text, each with one bug, the issue a user would file,
a hidden test the agent never sees (it grades the patch) and the known fix (so a unit test can check that the hidden
test fails before the fix and passes after it). Python, JavaScript (node's own test runner) and Go (stdlib only).
Easy ones a 1.5B model can sometimes fix (one operator) and harder ones (an edge case, two files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.support.buggy_repos import REPOS as PY_REPOS

PY_GRADE = "python3 -m unittest -q {hidden}"
JS_GRADE = "node --test {hidden}"
GO_GRADE = "go test ./... -run Hidden"


@dataclass(frozen=True)
class QualityTask:
    """One task: the repository's files, the issue, the hidden test (path and text) and how to run it."""

    name: str
    language: str
    issue: str
    files: dict[str, str]
    hidden_path: str
    hidden_test: str
    fix: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (old text, new text)
    grade: str = PY_GRADE

    @property
    def grade_command(self) -> str:
        return self.grade.format(hidden=self.hidden_path)


def _py(name: str, issue: str, source: str, path: str, tests: str, hidden: str, fix: tuple[str, str]) -> QualityTask:
    files = {
        path: source,
        "tests/__init__.py": "",
        f"tests/test_{name}.py": tests,
        "README.md": f"# {name}\n\nRun the tests with `python3 -m unittest discover -s tests -t .`.\n",
    }
    return QualityTask(name, "python", issue, files, "tests/test_hidden_check.py", hidden, {path: fix})


_FROM_TESTS = {  # the four repositories the test suite already has, with their fixes
    "calc": ("calc/ops.py", ("return a - b", "return a + b")),
    "shout": ("textkit/case.py", ('text.lower() + "!"', 'text.upper() + "!"')),
}


def _from_tests() -> list[QualityTask]:
    tasks = []
    for name, (path, fix) in _FROM_TESTS.items():
        repo = PY_REPOS[name]
        tasks.append(
            QualityTask(
                name, "python", repo.issue, repo.files, "tests/test_hidden_check.py", repo.hidden_test, {path: fix}
            )
        )
    return tasks


PYTHON = [
    *_from_tests(),
    _py(
        "clamp",
        "`clamp(15, 0, 10)` returns 0; a value above the range should give the upper bound, 10.",
        'def clamp(x, lo, hi):\n    """x limited to [lo, hi]."""\n    if x < lo:\n        return lo\n'
        "    if x > hi:\n        return lo\n    return x\n",
        "mathx/clamp.py",
        "import unittest\n\nfrom mathx.clamp import clamp\n\n\nclass ClampTest(unittest.TestCase):\n"
        "    def test_inside(self):\n        self.assertEqual(clamp(5, 0, 10), 5)\n\n"
        "    def test_below(self):\n        self.assertEqual(clamp(-1, 0, 10), 0)\n",
        "import unittest\n\nfrom mathx.clamp import clamp\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_above(self):\n        self.assertEqual(clamp(15, 0, 10), 10)\n",
        ("    if x > hi:\n        return lo", "    if x > hi:\n        return hi"),
    ),
    _py(
        "slug",
        "`slugify('Hello World!')` gives `'hello-world-'` with a trailing hyphen; it should be `'hello-world'`.",
        'import re\n\n\ndef slugify(text):\n    """Lower case words joined by hyphens."""\n'
        "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).lstrip('-')\n",
        "web/slug.py",
        "import unittest\n\nfrom web.slug import slugify\n\n\nclass SlugTest(unittest.TestCase):\n"
        "    def test_words(self):\n        self.assertEqual(slugify('Two Words'), 'two-words')\n",
        "import unittest\n\nfrom web.slug import slugify\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_punctuation_at_the_end(self):\n"
        "        self.assertEqual(slugify('Hello World!'), 'hello-world')\n",
        (".lstrip('-')", ".strip('-')"),
    ),
    _py(
        "words",
        "`count_words('a  b')` (two spaces) returns 3; it should count 2 words, whatever the spacing.",
        'def count_words(text):\n    """How many words the text has."""\n    return len(text.split(" "))\n',
        "textkit/words.py",
        "import unittest\n\nfrom textkit.words import count_words\n\n\nclass WordsTest(unittest.TestCase):\n"
        "    def test_simple(self):\n        self.assertEqual(count_words('one two three'), 3)\n",
        "import unittest\n\nfrom textkit.words import count_words\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_spacing(self):\n        self.assertEqual(count_words('a  b'), 2)\n"
        "        self.assertEqual(count_words('  lead trail  '), 2)\n",
        ('text.split(" ")', "text.split()"),
    ),
    _py(
        "fizz",
        "`fizzbuzz(15)` returns `'Fizz'`; multiples of both 3 and 5 should give `'FizzBuzz'`.",
        'def fizzbuzz(n):\n    """Fizz for multiples of 3, Buzz for 5, FizzBuzz for both, else the number."""\n'
        "    if n % 3 == 0:\n        return 'Fizz'\n    if n % 5 == 0:\n        return 'Buzz'\n"
        "    if n % 15 == 0:\n        return 'FizzBuzz'\n    return str(n)\n",
        "games/fizz.py",
        "import unittest\n\nfrom games.fizz import fizzbuzz\n\n\nclass FizzTest(unittest.TestCase):\n"
        "    def test_three(self):\n        self.assertEqual(fizzbuzz(9), 'Fizz')\n\n"
        "    def test_five(self):\n        self.assertEqual(fizzbuzz(10), 'Buzz')\n",
        "import unittest\n\nfrom games.fizz import fizzbuzz\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_both(self):\n        self.assertEqual(fizzbuzz(15), 'FizzBuzz')\n"
        "        self.assertEqual(fizzbuzz(7), '7')\n",
        (
            "    if n % 3 == 0:\n        return 'Fizz'\n    if n % 5 == 0:\n        return 'Buzz'\n"
            "    if n % 15 == 0:\n        return 'FizzBuzz'\n",
            "    if n % 15 == 0:\n        return 'FizzBuzz'\n    if n % 3 == 0:\n        return 'Fizz'\n"
            "    if n % 5 == 0:\n        return 'Buzz'\n",
        ),
    ),
    _py(
        "median",
        "`median([4, 1, 3, 2])` returns 3; for an even number of values the median is the mean of the two middle "
        "ones, 2.5.",
        'def median(values):\n    """The middle value of the sorted values."""\n    ordered = sorted(values)\n'
        "    return ordered[len(ordered) // 2]\n",
        "stats/median.py",
        "import unittest\n\nfrom stats.median import median\n\n\nclass MedianTest(unittest.TestCase):\n"
        "    def test_odd(self):\n        self.assertEqual(median([3, 1, 2]), 2)\n",
        "import unittest\n\nfrom stats.median import median\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_even(self):\n        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n"
        "        self.assertEqual(median([5, 1, 3]), 3)\n",
        (
            "    return ordered[len(ordered) // 2]\n",
            "    mid = len(ordered) // 2\n    if len(ordered) % 2 == 0:\n"
            "        return (ordered[mid - 1] + ordered[mid]) / 2\n    return ordered[mid]\n",
        ),
    ),
    _py(
        "roman",
        "`to_roman(4)` returns `'IIII'` and `to_roman(9)` returns `'VIIII'`; they should be `'IV'` and `'IX'`.",
        'NUMERALS = [(10, "X"), (5, "V"), (1, "I")]\n\n\ndef to_roman(n):\n    """n (1-39) in Roman numerals."""\n'
        '    out = ""\n    for value, letter in NUMERALS:\n        while n >= value:\n'
        "            out += letter\n            n -= value\n    return out\n",
        "numerals/roman.py",
        "import unittest\n\nfrom numerals.roman import to_roman\n\n\nclass RomanTest(unittest.TestCase):\n"
        "    def test_simple(self):\n        self.assertEqual(to_roman(13), 'XIII')\n",
        "import unittest\n\nfrom numerals.roman import to_roman\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_subtractive(self):\n        self.assertEqual(to_roman(4), 'IV')\n"
        "        self.assertEqual(to_roman(9), 'IX')\n        self.assertEqual(to_roman(14), 'XIV')\n",
        (
            'NUMERALS = [(10, "X"), (5, "V"), (1, "I")]',
            'NUMERALS = [(10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]',
        ),
    ),
]


def _js(name: str, issue: str, source: str, tests: str, hidden: str, fix: tuple[str, str]) -> QualityTask:
    files = {
        f"{name}.js": source,
        f"test/{name}.test.js": tests,
        "package.json": f'{{"name": "{name}", "version": "1.0.0", "scripts": {{"test": "node --test"}}}}\n',
    }
    return QualityTask(name, "javascript", issue, files, "test/hidden.test.js", hidden, {f"{name}.js": fix}, JS_GRADE)


def _js_test(name: str, fn: str, body: str) -> str:
    return (
        f"const test = require('node:test');\nconst assert = require('node:assert');\n"
        f"const {{ {fn} }} = require('../{name}.js');\n\n{body}"
    )


JAVASCRIPT = [
    _js(
        "range",
        "`range(1, 4)` returns `[1, 2, 3]`, but the README says both ends are included: it should be `[1, 2, 3, 4]`.",
        "// range(a, b): the integers from a to b, both included.\nfunction range(a, b) {\n  const out = [];\n"
        "  for (let i = a; i < b; i++) out.push(i);\n  return out;\n}\n\nmodule.exports = { range };\n",
        _js_test("range", "range", "test('starts at a', () => {\n  assert.strictEqual(range(3, 6)[0], 3);\n});\n"),
        _js_test(
            "range", "range", "test('inclusive', () => {\n  assert.deepStrictEqual(range(1, 4), [1, 2, 3, 4]);\n});\n"
        ),
        ("i < b", "i <= b"),
    ),
    _js(
        "capital",
        "`capitalize('')` throws `TypeError: Cannot read properties of undefined`; an empty string should give ''.",
        "// capitalize(s): s with its first letter in upper case.\nfunction capitalize(s) {\n"
        "  return s[0].toUpperCase() + s.slice(1);\n}\n\nmodule.exports = { capitalize };\n",
        _js_test(
            "capital", "capitalize", "test('word', () => {\n  assert.strictEqual(capitalize('hello'), 'Hello');\n});\n"
        ),
        _js_test(
            "capital",
            "capitalize",
            "test('empty', () => {\n  assert.strictEqual(capitalize(''), '');\n"
            "  assert.strictEqual(capitalize('a'), 'A');\n});\n",
        ),
        ("  return s[0]", "  if (s === '') return '';\n  return s[0]"),
    ),
]


def _go(name: str, issue: str, source: str, tests: str, hidden: str, fix: tuple[str, str]) -> QualityTask:
    files = {"go.mod": f"module example.com/{name}\n\ngo 1.19\n", f"{name}.go": source, f"{name}_test.go": tests}
    return QualityTask(name, "go", issue, files, "hidden_test.go", hidden, {f"{name}.go": fix}, GO_GRADE)


GO = [
    _go(
        "absval",
        "`Abs(-3)` returns -3; the absolute value of a negative number should be positive (3).",
        "package absval\n\n// Abs is the absolute value of n.\nfunc Abs(n int) int {\n\tif n < 0 {\n\t\treturn n\n\t}\n"
        "\treturn n\n}\n",
        'package absval\n\nimport "testing"\n\nfunc TestPositive(t *testing.T) {\n\tif Abs(4) != 4 {\n'
        '\t\tt.Fatal("Abs(4)")\n\t}\n}\n',
        'package absval\n\nimport "testing"\n\nfunc TestHiddenNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n'
        '\t\tt.Fatalf("Abs(-3) = %d", Abs(-3))\n\t}\n}\n',
        ("\tif n < 0 {\n\t\treturn n\n", "\tif n < 0 {\n\t\treturn -n\n"),
    ),
    _go(
        "reverse",
        '`Reverse("abc")` returns `"cb"`: the first letter is lost. It should return `"cba"`.',
        "package reverse\n\n// Reverse returns s backwards.\nfunc Reverse(s string) string {\n\tr := []rune(s)\n"
        "\tout := make([]rune, 0, len(r))\n\tfor i := len(r) - 1; i > 0; i-- {\n\t\tout = append(out, r[i])\n\t}\n"
        "\treturn string(out)\n}\n",
        'package reverse\n\nimport "testing"\n\nfunc TestEmpty(t *testing.T) {\n\tif Reverse("") != "" {\n'
        '\t\tt.Fatal("empty")\n\t}\n}\n',
        'package reverse\n\nimport "testing"\n\nfunc TestHiddenWord(t *testing.T) {\n\tif got := Reverse("abc"); '
        'got != "cba" {\n\t\tt.Fatalf("Reverse(abc) = %q", got)\n\t}\n}\n',
        ("i > 0; i--", "i >= 0; i--"),
    ),
]

TASKS = {task.name: task for task in (*PYTHON, *JAVASCRIPT, *GO)}


def write_files(task: QualityTask, root: Path) -> Path:
    """The task's repository files under `root` (no git)."""
    for name, text in task.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def apply_fix(task: QualityTask, root: Path) -> None:
    """The known fix, applied in place (for the tasks' own test)."""
    for name, (old, new) in task.fix.items():
        text = (root / name).read_text()
        assert old in text, f"{task.name}: the fix's text is not in {name}"
        (root / name).write_text(text.replace(old, new, 1))
