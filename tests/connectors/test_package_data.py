"""A package's own data files travel with its tasks (field case: validators 0.36.0's ``_tld.txt``).

validators' ``domain`` reads ``Path(__file__).parent / "_tld.txt"``; before the package's data
files were carried, its reference failed in the sandbox with ``FileNotFoundError`` and the task was
quarantined as ``reference_fails``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.suites.pyrepo import package_data
from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.config import SandboxConfig
from sdk.sandbox.contract import ExecRequest, Limits

CODE = '''"""Top-level domains."""
from pathlib import Path


def is_tld(name):
    """True when ``name`` is one of the listed top-level domains (case-insensitive)."""
    listed = (Path(__file__).parent / "_tld.txt").read_text(encoding="utf-8").split()
    return name.lower() in listed
'''
TESTS = '''from tldlib.core import is_tld


def test_listed():
    assert is_tld("org") and is_tld("COM")


def test_unlisted():
    assert not is_tld("example")
'''


def _repo(root: Path) -> Path:
    pkg = root / "src" / "tldlib"
    (pkg / "data").mkdir(parents=True)
    (root / "tests").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text(CODE)
    (pkg / "_tld.txt").write_text("com\norg\nnet\n")
    (pkg / "data" / "notes.md").write_text("nested data\n")
    (pkg / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    (pkg / "big.txt").write_text("x" * (65 * 1024))
    (root / "tests" / "test_core.py").write_text(TESTS)
    return root


def test_package_data_keeps_small_text_files_only(tmp_path):
    repo = _repo(tmp_path)
    got = package_data(repo, repo / "src" / "tldlib")
    assert got == {"src/tldlib/_tld.txt": "com\norg\nnet\n", "src/tldlib/data/notes.md": "nested data\n"}


def test_a_reference_reading_its_data_file_passes_in_the_sandbox(tmp_path):
    sandbox_mod = pytest.importorskip("sdk.sandbox")
    repo = _repo(tmp_path)
    result = PytestSuiteSource({"path": str(repo), "package": "tldlib"}, repo, "tld").read()
    (task,) = [t for t in result.tasks if t.verifier.entry_point == "is_tld"]
    v = task.verifier
    assert v.files.get("src/tldlib/_tld.txt") == "com\norg\nnet\n"
    box = sandbox_mod.make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        (res,) = box.run([ExecRequest(framework=v.framework, solution=task.reference, tests=v.tests, files=v.files,
                                      target_path=v.target_path, entry_point=v.entry_point, prelude=v.prelude,
                                      limits=Limits(timeout_s=v.timeout_s))])
    finally:
        box.close()
    assert res.all_passed, res.detail[:500]


UNIDECODE = '''"""Transliteration from a table the package reads with pkgutil (text_unidecode 1.3's layout)."""
import pkgutil

_TABLE = pkgutil.get_data(__name__, "table.bin").decode("utf8").split("\\x00")


def lookup(i):
    """The table's entry ``i``."""
    return _TABLE[i]
'''


def test_a_large_data_file_the_code_names_travels_and_pkgutil_reads_it(tmp_path, caplog):
    """text_unidecode 1.3: ``pkgutil.get_data(__name__, 'data.bin')`` of a 311 KB NUL-separated table in
    the package's ``__init__.py``: the file was over 64 KiB (left out) and the sandbox's module had no
    ``__spec__`` (``ValueError``), so its one function was ``reference_fails``."""
    sandbox_mod = pytest.importorskip("sdk.sandbox")
    pkg = tmp_path / "src" / "unilib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(UNIDECODE)
    table = "\x00".join("\r" if i == 3 else f"e{i}" for i in range(20000))  # ~128 KiB, NUL-separated
    (pkg / "table.bin").write_bytes(table.encode())  # its "\r" must stay "\r" (read without newline translation)
    (pkg / "unnamed.txt").write_text("y" * (65 * 1024))
    (tmp_path / "test_unilib.py").write_text("from unilib import lookup\n\ndef test_lookup():\n"
                                             "    assert lookup(7) == 'e7' and lookup(3) == '\\r'\n")
    got = package_data(tmp_path, pkg)
    assert sorted(got) == ["src/unilib/table.bin"] and got["src/unilib/table.bin"] == table
    result = PytestSuiteSource({"path": str(tmp_path), "package": "unilib", "tests": "."}, tmp_path, "u").read()
    (task,) = result.tasks
    v = task.verifier
    box = sandbox_mod.make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        (res,) = box.run([ExecRequest(framework=v.framework, solution=task.reference, tests=v.tests, files=v.files,
                                      target_path=v.target_path, entry_point=v.entry_point, prelude=v.prelude,
                                      limits=Limits(timeout_s=v.timeout_s))])
    finally:
        box.close()
    assert res.all_passed, res.detail[:500]
    (pkg / "table.bin").write_bytes(b"\xff" * 10)
    assert package_data(tmp_path, pkg) == {} and "not UTF-8 text" in caplog.text
