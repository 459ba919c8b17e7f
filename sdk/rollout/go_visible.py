"""The Go side of the change agent's ``run_tests``: hidden tests cut out of ``_test.go`` files (issue 17).

A Go test package builds with all its ``_test.go`` files, so the agent's run takes every test file
of each package that holds a **pass-to-pass** test, with each **fail-to-pass** test function blanked
out (from its doc comment and ``func TestX(`` to the next line that starts with ``}``, the rule
:func:`sdk.sandbox.languages.gorepo.go_test_functions` reads tests by; gofmt'd code). Go refuses to
build a file with an import it no longer uses, so an import of a file that lost a function and
whose name no longer occurs as ``name.`` outside comments and string literals becomes a blank
import (``_ "path"``), which Go always accepts. Packages holding only fail-to-pass tests are not
run at all. What is not hidden: the rest of those files (helpers, other tests) and the task's
test-side support files (``testdata/``: pass-to-pass tests may read them).

Known limit: a package name shadowed by a local variable of the same name (``strings := ...``)
counts as used; if it was not, that package fails to build and its pass-to-pass tests read as
failing (the tool's answer carries the build error).
"""

from __future__ import annotations

import posixpath
import re

from sdk.sandbox.languages.gorepo import TEST_FUNC
from sdk.tasks.change import ChangeVerifier

_SPEC = re.compile(r'^(\s*)(?:([\w.]+)\s+)?("[^"\n]*"|`[^`\n]*`)(.*)$')
_BLOCK = re.compile(r"^import\s*\(\s*$", re.MULTILINE)
_SINGLE = re.compile(r'^import\s+(?:[\w.]+\s+)?(?:"[^"\n]*"|`[^`\n]*`).*$', re.MULTILINE)
_PACKAGE = re.compile(r"^package\s+(\w+)", re.MULTILINE)
_VERSION = re.compile(r"^v\d+$")


def strip_comments_and_strings(text: str) -> str:
    """``text`` with Go comments and string/rune literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c, nxt = text[i], text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt in "/*":
            end = text.find("\n" if nxt == "/" else "*/", i + 2)
            end = n if end < 0 else end + (0 if nxt == "/" else 2)
        elif c in "\"'`":
            end = i + 1
            while end < n and text[end] != c and (c == "`" or text[end] != "\n"):
                end += 2 if text[end] == "\\" and c != "`" else 1
            end = min(end + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i = end
    return "".join(out)


def cut_test_functions(text: str, names: set[str]) -> tuple[str, int]:
    """``(text with the test functions `names` blanked, how many were cut)``: each from its doc
    comment (the ``//`` lines right above) to the next line starting with ``}``; lines become empty."""
    lines = text.splitlines(keepends=True)
    starts = {text.count("\n", 0, m.start()): m.group(1) for m in TEST_FUNC.finditer(text) if m.group(1) in names}
    cut = 0
    for first in sorted(starts, reverse=True):
        last = next((k for k in range(first + 1, len(lines)) if lines[k].startswith("}")), len(lines) - 1)
        while first > 0 and lines[first - 1].lstrip().startswith("//"):
            first -= 1
        lines[first: last + 1] = ["\n"] * (last + 1 - first)
        cut += 1
    return "".join(lines), cut


def default_name(path: str, packages: dict[str, str], module: str) -> str:
    """The name an import of ``path`` binds without an alias: the module's own package's ``package``
    clause when ``path`` is one of its folders (``packages``: folder -> name), else the last path
    element without a ``/vN`` or ``.vN`` version suffix."""
    if module and (path == module or path.startswith(module + "/")):
        folder = path[len(module) + 1:] if path != module else ""
        if folder in packages:
            return packages[folder]
    parts = path.split("/")
    last = parts[-2] if len(parts) > 1 and _VERSION.match(parts[-1]) else parts[-1]
    return re.sub(r"\.v\d+$", "", last).replace("-", "_")


def blank_unused_imports(text: str, packages: dict[str, str], module: str) -> str:
    """``text`` with each import whose name no longer occurs as ``name.`` in code made blank (``_``);
    dot, blank and ``C`` imports are left as they are."""
    code = strip_comments_and_strings(text)
    lines, code_lines = text.splitlines(keepends=True), code.splitlines(keepends=True)
    spans = [(text.count("\n", 0, m.start()), "single") for m in _SINGLE.finditer(text)
             if code.startswith("import", m.start())]
    for m in _BLOCK.finditer(code):
        first = text.count("\n", 0, m.start())
        last = next((k for k in range(first + 1, len(lines)) if lines[k].strip().startswith(")")), first)
        spans += [(k, "block") for k in range(first + 1, last)]
    for k, kind in spans:
        body = lines[k][len("import"):].lstrip() if kind == "single" else lines[k]
        m = _SPEC.match(body)
        if not m:
            continue
        alias, quoted = m.group(2), m.group(3)
        path = quoted[1:-1]
        name = alias or default_name(path, packages, module)
        if name in ("_", ".") or path == "C":
            continue
        rest = "".join(code_lines[:k] + code_lines[k + 1:])
        if not re.search(rf"(?<![\w.]){re.escape(name)}\s*\.", rest):
            head = "import " if kind == "single" else m.group(1)
            lines[k] = f"{head}_ {quoted}{m.group(4)}\n"
    return "".join(lines)


def visible_go_tests(verifier: ChangeVerifier) -> tuple[dict[str, str], tuple[str, ...]]:
    """``(test files, pass-to-pass ids)`` of a Go change task's ``run_tests``: every test file of
    each package (folder) that holds a pass-to-pass test, fail-to-pass functions cut and imports
    fixed (see the module docstring); the ids of the pass-to-pass tests in them."""
    from sdk.sandbox.languages.gorepo import module_path

    hidden: dict[str, set[str]] = {}
    for t in verifier.fail_to_pass:
        path, _, name = t.partition("::")
        hidden.setdefault(path, set()).add(name)
    folders = {posixpath.dirname(t.split("::")[0]) for t in verifier.pass_to_pass}
    every = {**verifier.files, **verifier.tests}
    packages = {posixpath.dirname(p): m.group(1) for p, text in sorted(every.items())
                if p.endswith(".go") and not p.endswith("_test.go") and (m := _PACKAGE.search(text))}
    module = module_path(verifier.files)
    out = {}
    for path, text in sorted(verifier.tests.items()):
        if posixpath.dirname(path) not in folders or not path.endswith("_test.go"):
            continue
        cut, n = cut_test_functions(text, hidden.get(path, set()))
        out[path] = blank_unused_imports(cut, packages, module) if n else text
    ids = tuple(t for t in verifier.pass_to_pass if t.split("::")[0] in out)
    return out, ids
