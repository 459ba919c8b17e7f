"""read_package: a module that is not text or does not parse is named with a fix that works
(`exclude:` leaves it out), and a module's declared encoding is honoured."""

import pytest

from connectors.suites.pyrepo import read_package
from sdk.errors import SourceError


def _repo(tmp_path, other: bytes):
    pkg = tmp_path / "mylib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('def add(a, b):\n    """Add."""\n    return a + b\n')
    (pkg / "other.py").write_bytes(other)
    return tmp_path, pkg


def test_non_utf8_module_is_named_and_exclude_leaves_it_out(tmp_path):
    repo, pkg = _repo(tmp_path, b'def sub(a, b):\n    """S\xff."""\n    return a - b\n')
    with pytest.raises(SourceError) as err:
        read_package(repo, pkg)
    assert "mylib/other.py" in err.value.what and "exclude" in err.value.fix
    modules, files = read_package(repo, pkg, ["mylib/other.py"])
    assert sorted(files) == ["mylib/__init__.py"] and [m.path for m in modules] == ["mylib/__init__.py"]


def test_unparsable_module_excluded_is_carried_not_scanned(tmp_path):
    repo, pkg = _repo(tmp_path, b"def broken(:\n")
    with pytest.raises(SourceError, match="does not parse"):
        read_package(repo, pkg)
    modules, files = read_package(repo, pkg, ["mylib/*"])
    assert "mylib/other.py" in files and "mylib/other.py" not in [m.path for m in modules]


def test_declared_encoding_is_honoured(tmp_path):
    repo, pkg = _repo(tmp_path, b'# -*- coding: latin-1 -*-\ndef sub(a, b):\n    """Caf\xe9."""\n    return a - b\n')
    _, files = read_package(repo, pkg)
    assert "Caf\u00e9" in files["mylib/other.py"]


def test_unreadable_module_is_named(tmp_path):
    """A dangling symlink (or a file this user cannot read) is named, not a bare OSError."""
    repo, pkg = _repo(tmp_path, b"X = 1\n")
    (pkg / "gone.py").symlink_to(tmp_path / "missing.py")
    with pytest.raises(SourceError) as err:
        read_package(repo, pkg)
    assert "mylib/gone.py cannot be read" in err.value.what and "No such file" in err.value.what
