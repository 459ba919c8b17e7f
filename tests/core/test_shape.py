"""The shape rules the layout promises: no source file over 400 lines, no function over 60 lines
(Alembic migrations aside). The import contracts themselves are checked by `lint-imports`
(`.importlinter`), which `make test` runs before pytest."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sdk", "connectors", "feedback")
MAX_FILE, MAX_FUNCTION = 400, 60


def _sources():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_no_source_file_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in _sources() if (n := len(p.read_text().splitlines())) > MAX_FILE}
    assert not long, f"split these by concern: {long}"


def test_no_function_over_60_lines():
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION:
                    long[f"{path.relative_to(ROOT)}:{node.name}"] = n
    assert not long, f"split these functions: {long}"

