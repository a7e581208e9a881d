"""The tests a Python file defines, found by `ast` in a separate process under CPU, memory and time limits.

A file the agent wrote can be built to be expensive for Python's parser (a million `x=1` lines, a huge tuple, a
deep call chain: tens of seconds and a gigabyte each), so the worker never parses one itself: a child Python
(isolated mode, no site) sets its own limits with `resource.setrlimit`, parses, and prints what it found as JSON.
A child that fails, runs out of CPU or memory, or overruns the wall-clock limit means "could not tell" (None).

Besides test functions and methods, each `@pytest.mark.parametrize` entry is a case of its test: named
`test_x[id]` by `pytest.param(…, id=…)` or `ids=[…]`, else `test_x[<the entry's source>]` (a list or tuple
literal, or a module-level variable assigned one); argument values of another shape are one unknown case.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from dataclasses import dataclass

CPU_SECONDS = 5
MEMORY_BYTES = 512 << 20
WALL_SECONDS = 20

_CHILD = r"""
import ast, base64, hashlib, json, resource, sys
cpu, mem = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
source = base64.b64decode(sys.stdin.buffer.read())

def body(fn):
    rest = fn.body
    first = rest[0] if rest else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        rest = rest[1:]
    return rest

def trivial(stmts):
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
               for s in stmts)

def callee(func):
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""

def asserts(fn):
    for n in ast.walk(fn):
        if isinstance(n, (ast.Assert, ast.Raise)):
            return True
        if isinstance(n, ast.Call) and callee(n.func).startswith(("assert", "fail", "raises", "expect")):
            return True
    return False

def digest(node):
    return hashlib.sha256(ast.dump(node).encode()).hexdigest()

def shown(node):
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 80 else text[:60] + "..." + digest(node)[:8]

# The entries of a list or tuple literal, or of a module-level variable assigned one; None: another shape.
def listed(node, module):
    if isinstance(node, ast.Name) and node.id in module:
        node = module[node.id]
    return node.elts if isinstance(node, (ast.List, ast.Tuple)) else None

# The cases of `@pytest.mark.parametrize(names, values)`: named by `pytest.param(id=)` or `ids=[]`, else by their
# own source; values of another shape are one unknown case.
def cases(fn, test, module, out):
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and callee(dec.func) == "parametrize"):
            continue
        keywords = {k.arg: k.value for k in dec.keywords}
        values = dec.args[1] if len(dec.args) > 1 else keywords.get("argvalues")
        if values is None:
            continue
        entries = listed(values, module)
        if entries is None:
            out[test + "[" + shown(values) + "]"] = [digest(values), False, False, "unknown", test]
            continue
        ids = keywords.get("ids")
        ids = ids.elts if isinstance(ids, (ast.List, ast.Tuple)) and len(ids.elts) == len(entries) else None
        for n, entry in enumerate(entries):
            name, kind = None, "case"
            given = ids[n] if ids else None
            if isinstance(entry, ast.Call) and callee(entry.func) == "param":
                given = next((k.value for k in entry.keywords if k.arg == "id"), given)
            if isinstance(given, ast.Constant) and isinstance(given.value, str):
                name, kind = given.value, "test"
            label = name if name is not None else shown(entry)
            out[test + "[" + label + "]"] = [digest(entry), False, False, kind, test]

def names(stmts, prefix, out, module):
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            kept = body(node)
            dump = ast.dump(ast.Module(body=kept, type_ignores=[]))
            out[prefix + node.name] = [hashlib.sha256(dump.encode()).hexdigest(), trivial(kept), asserts(node)]
            cases(node, prefix + node.name, module, out)
        elif isinstance(node, ast.ClassDef):
            names(node.body, prefix + node.name + "::", out, module)

tree = ast.parse(source)
module = {}
for node in tree.body:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        module[node.targets[0].id] = node.value
found = {}
names(tree.body, "", found, module)
sys.stdout.write(json.dumps(found))
"""


TEST = "test"  # a test or a case with a name of its own: gone is dropped
CASE = "case"  # a case named by its own source (a parametrize entry, a table row): see `dropped.judge_file`
UNKNOWN = "unknown"  # a test declaration whose tests cannot be named (a macro of another shape): gone is "cannot tell"


@dataclass(frozen=True)
class TestBody:
    """One test's body as the scanner saw it: equivalent bodies have the same fingerprint."""

    fingerprint: str  # sha256 of `ast.dump` of the body without its docstring (layout and comments ignored)
    trivial: bool  # only `pass`, `...` or constants
    asserts: bool  # holds an `assert`, a `raise`, or a call named assert*/fail*/raises*/expect*
    kind: str = TEST  # TEST, CASE or UNKNOWN: how sure the App is of what its name says
    parent: str = ""  # a case's test (its function, or a `.each` table's title): listed alone when it goes


TestMap = dict[str, TestBody]
"""Test name (`test_x`, `Class::test_y`) -> its body."""


def python_tests(source: bytes, max_bytes: int) -> TestMap | None:
    """The tests `source` defines; None when it is not valid Python, too large, or too costly to parse."""
    if len(source) > max_bytes:
        return None
    argv = [sys.executable, "-I", "-S", "-c", _CHILD, str(CPU_SECONDS), str(MEMORY_BYTES)]
    try:
        proc = subprocess.run(
            argv, input=base64.b64encode(source), capture_output=True, timeout=WALL_SECONDS, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    if proc.returncode != 0:
        return None
    try:
        found = json.loads(proc.stdout)
        return {str(name): _body(*fields) for name, fields in found.items()}
    except (ValueError, TypeError, AttributeError):
        return None


def _body(fingerprint: str, trivial: bool, asserts: bool, kind: str = TEST, parent: str = "") -> TestBody:
    return TestBody(str(fingerprint), bool(trivial), bool(asserts), str(kind), str(parent))
