"""The tests a Python file defines, found by `ast` in a separate process under CPU, memory and time limits.

A file the agent wrote can be built to be expensive for Python's parser (a million `x=1` lines, a huge tuple, a
deep call chain: tens of seconds and a gigabyte each), so the worker never parses one itself: a child Python
(isolated mode, no site) sets its own limits with `resource.setrlimit`, parses, and prints what it found as JSON.
A child that fails, runs out of CPU or memory, or overruns the wall-clock limit means "could not tell" (None).
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

def names(stmts, prefix, out):
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            kept = body(node)
            dump = ast.dump(ast.Module(body=kept, type_ignores=[]))
            out[prefix + node.name] = [hashlib.sha256(dump.encode()).hexdigest(), trivial(kept), asserts(node)]
        elif isinstance(node, ast.ClassDef):
            names(node.body, prefix + node.name + "::", out)

found = {}
names(ast.parse(source).body, "", found)
sys.stdout.write(json.dumps(found))
"""


@dataclass(frozen=True)
class TestBody:
    """One test's body as the scanner saw it: equivalent bodies have the same fingerprint."""

    fingerprint: str  # sha256 of `ast.dump` of the body without its docstring (layout and comments ignored)
    trivial: bool  # only `pass`, `...` or constants
    asserts: bool  # holds an `assert`, a `raise`, or a call named assert*/fail*/raises*/expect*


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
        return {str(name): TestBody(str(f), bool(t), bool(a)) for name, (f, t, a) in found.items()}
    except (ValueError, TypeError, AttributeError):
        return None
