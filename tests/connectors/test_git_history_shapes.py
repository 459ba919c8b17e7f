"""The ``git_history`` source on shapes of real histories that the ``calc`` repository of
``history_repo`` does not have (found by mining python-parse and golang-lru, issue 17): each test
builds a small generated repository whose commits have that shape and mines it in the sandbox."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from connectors.history.source import GitHistorySource
from tests.connectors import history_repo


@pytest.fixture(scope="module")
def sandbox():
    yield from history_repo.module_sandbox()


def mine(root: Path, commits: list[tuple[dict[str, str | None], str]], sandbox, **options):
    """Build ``root/r`` from ``commits`` (files, None to delete one; message), oldest first, and mine
    it; ``(shas, result)``."""
    repo = root / "r"
    repo.mkdir(parents=True)
    history_repo.git(repo, "init", "-q", "-b", "main")
    shas = []
    for day, (files, message) in enumerate(commits, 1):
        for gone in [p for p, text in files.items() if text is None]:
            (repo / gone).unlink()
        shas.append(history_repo.commit(repo, {p: t for p, t in files.items() if t is not None}, message, day))
    opts = {"path": "r", "reruns": 0, "heldout_fraction": 0.0, **options}
    return shas, GitHistorySource(opts, root, "python/shapes", sandbox=sandbox).read()


DOCSTRING_TEST = '''"""Tests of the text module.

They start with a module docstring of several lines, as many projects' test modules do.
"""

from text import shout


def test_shout():
    assert shout("a") == "A!"
'''


def test_a_test_module_with_a_docstring_collects_and_makes_a_task(tmp_path, sandbox, caplog):
    """pytest puts its rewrite's imports after the docstring with no end line; the shadow pass once
    gave them end line 1 (``ValueError: AST node line range (6, 1) is not valid``: tests_cannot_run).
    Each candidate commit prints a progress line (mining a long history once printed nothing)."""
    progress = logging.getLogger("tuneloop.progress")
    progress.addHandler(caplog.handler)
    caplog.set_level(logging.INFO, logger="tuneloop.progress")
    try:
        shas, result = _mine_docstring(tmp_path, sandbox)
    finally:
        progress.removeHandler(caplog.handler)
    assert [q.reason for q in result.quarantined] == []
    assert [t.source.commit for t in result.tasks] == [shas[1]]
    assert result.tasks[0].verifier.fail_to_pass == ("test_text.py::test_shout",)
    lines = [r.getMessage() for r in caplog.records if r.name == "tuneloop.progress"]
    assert any(ln.startswith(f"git_history: commit 1/1 {shas[1][:10]}: task (1 tasks, 0 quarantined") for ln in lines)
    assert "git_history: scoring the 1 references (each commit's own diff must earn 1.0)" in lines
    # the build summary's fixes name the knob that moves this source's split (it fixes its own)
    from sdk.config import parse_config
    from sdk.run.health import check_health

    cfg = parse_config({"sources": [{"type": "git_history", "domain": "d", "options": {"path": "r"}}]})
    fixes = [f.fix for f in check_health(result.tasks, 0, cfg, fixed={t.id for t in result.tasks})]
    assert any(f.endswith("or lower the source's own heldout_fraction option (its split is fixed: "
                          "tasks.heldout_fraction does not apply)") for f in fixes)
    assert any(f.endswith("or lower tasks.heldout_fraction") for f in (x.fix for x in check_health(result.tasks, 0, cfg)))


def _mine_docstring(tmp_path, sandbox):
    return mine(tmp_path, [
        ({"text.py": "def shout(s):\n    return s.upper()\n", "test_text.py": DOCSTRING_TEST.replace(' + "!"', "")
          .replace('"A!"', '"A"')}, "Initial"),
        ({"text.py": "def shout(s):\n    return s.upper() + '!'\n", "test_text.py": DOCSTRING_TEST}, "Shout with a bang"),
    ], sandbox)


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


def test_a_commit_changing_a_file_left_out_of_the_snapshot_says_so(tmp_path, sandbox):
    """A test module over ``max_file_kb`` is left out of the snapshot; the commit changing it was
    once 'tests_cannot_run: ... no test module that exists at the commit'."""
    pad = "# " + "x" * 1500 + "\n"
    _, result = mine(tmp_path, [
        ({"text.py": "def shout(s):\n    return s.upper()\n",
          "tests/test_text.py": pad + "from text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"},
         "Initial"),
        ({"text.py": "def shout(s):\n    return s.upper() + '!'\n",
          "tests/test_text.py": pad + "from text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A!'\n"},
         "Shout with a bang"),
    ], sandbox, max_file_kb=1)
    assert result.tasks == []
    assert [q.reason for q in result.quarantined] == [(
        "snapshot_too_large: the commit changes files left out of the snapshot (larger than max_file_kb 1 KiB, "
        "or not UTF-8 text): tests/test_text.py\nfix: raise the source's `max_file_kb` "
        "(e.g. --set sources.0.options.max_file_kb=4)")]


MIXIN_TEST = '''import unittest

from text import shout


class ShoutChecks:
    def test_upper(self):
        self.assertEqual(shout("a")[0], "A")


class ShoutTests(ShoutChecks, unittest.TestCase):
    pass
'''


def test_tests_a_class_inherits_from_a_mixin_count_as_run(tmp_path, sandbox):
    """pytest names an inherited test after its subclass (``ShoutTests::test_upper``) while its code
    is ``ShoutChecks.test_upper``: the witness once found no genuine code for that node, so every
    such pass was ``runner_tampering`` and the reference failed (more-itertools' PeekableMixinTests)."""
    _, result = mine(tmp_path, [
        ({"text.py": "def shout(s):\n    return s.upper()\n", "tests/test_text.py": MIXIN_TEST}, "Initial"),
        ({"text.py": "def shout(s):\n    return s.upper() + '!'\n",
          "tests/test_text.py": MIXIN_TEST.replace("    pass\n", "    def test_bang(self):\n"
                                                                    "        self.assertEqual(shout('a'), 'A!')\n")},
         "Shout with a bang"),
    ], sandbox)
    assert [q.reason for q in result.quarantined] == []
    (task,) = result.tasks
    assert task.verifier.fail_to_pass == ("tests/test_text.py::ShoutTests::test_bang",)
    assert task.verifier.pass_to_pass == ("tests/test_text.py::ShoutTests::test_upper",)


def test_a_suite_past_its_time_limit_says_which_option_to_raise(tmp_path, sandbox):
    slow = "import time\n\nfrom text import shout\n\n\ndef test_shout():\n    time.sleep(30)\n    assert shout('a') == {}\n"
    _, result = mine(tmp_path, [
        ({"text.py": "def shout(s):\n    return s.upper()\n", "tests/test_text.py": slow.format("'A'")}, "Initial"),
        ({"text.py": "def shout(s):\n    return s.upper() + '!'\n", "tests/test_text.py": slow.format("'A!'")},
         "Shout with a bang"),
    ], sandbox, suite_timeout_s=3)
    (q,) = result.quarantined
    assert q.reason.startswith("tests_cannot_run: at the commit: timeout")
    assert q.reason.endswith("\nfix: raise the source's `suite_timeout_s` (one run of the commit's test modules, "
                             "default 120 s; e.g. --set sources.0.options.suite_timeout_s=600) or lower `max_test_files`")
