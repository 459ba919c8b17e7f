"""The ``git_history`` source on shapes of real histories that the ``calc`` repository of
``history_repo`` does not have (found by mining python-parse and golang-lru, issue 17): each test
builds a small generated repository whose commits have that shape and mines it in the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.history.source import GitHistorySource
from tests.connectors import history_repo


@pytest.fixture(scope="module")
def sandbox():
    yield from history_repo.module_sandbox()


def mine(root: Path, commits: list[tuple[dict[str, str], str]], sandbox, **options):
    """Build ``root/r`` from ``commits`` (files, message), oldest first, and mine it; ``(shas, result)``."""
    repo = root / "r"
    repo.mkdir(parents=True)
    history_repo.git(repo, "init", "-q", "-b", "main")
    shas = [history_repo.commit(repo, files, message, day) for day, (files, message) in enumerate(commits, 1)]
    opts = {"path": "r", "reruns": 0, "heldout_fraction": 0.0, **options}
    return shas, GitHistorySource(opts, root, "python/shapes", sandbox=sandbox).read()


DOCSTRING_TEST = '''"""Tests of the text module.

They start with a module docstring of several lines, as many projects' test modules do.
"""

from text import shout


def test_shout():
    assert shout("a") == "A!"
'''


def test_a_test_module_with_a_docstring_collects_and_makes_a_task(tmp_path, sandbox):
    """pytest puts its rewrite's imports after the docstring with no end line; the shadow pass once
    gave them end line 1 (``ValueError: AST node line range (6, 1) is not valid``: tests_cannot_run)."""
    shas, result = mine(tmp_path, [
        ({"text.py": "def shout(s):\n    return s.upper()\n", "test_text.py": DOCSTRING_TEST.replace(' + "!"', "")
          .replace('"A!"', '"A"')}, "Initial"),
        ({"text.py": "def shout(s):\n    return s.upper() + '!'\n", "test_text.py": DOCSTRING_TEST}, "Shout with a bang"),
    ], sandbox)
    assert [q.reason for q in result.quarantined] == []
    assert [t.source.commit for t in result.tasks] == [shas[1]]
    assert result.tasks[0].verifier.fail_to_pass == ("test_text.py::test_shout",)


README = "# text\n\n```python\nfrom text import shout\nshout('a')\n```\n"


def test_a_commit_that_changes_a_fenced_block_in_markdown_keeps_its_whole_reference(tmp_path, sandbox):
    """The reference travels as a ```diff block; a hunk line holding ``` (a README's code fence) once
    ended that block early: ``reference_fails`` (``patch failed: README.md``)."""
    shas, result = mine(tmp_path, [
        ({"text.py": "def shout(s):\n    return s.upper()\n", "README.md": README,
          "tests/test_text.py": "from text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"},
         "Initial"),
        ({"text.py": "def shout(s):\n    return s.upper() + '!'\n",
          "README.md": README.replace("```python", "```py").replace("```\n", "```\n\nNow with a bang.\n"),
          "tests/test_text.py": "from text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A!'\n"},
         "Shout with a bang"),
    ], sandbox)
    assert [q.reason for q in result.quarantined] == []
    task = result.tasks[0]
    assert task.source.commit == shas[1] and "+```py\n" in task.reference and "README.md" in task.reference
