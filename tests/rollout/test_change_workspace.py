"""The change agent's workspace and file tools without a sandbox: paths confined to the repository
(``..``, absolute paths and symlinks refused), edits to tests/CI refused, the final diff exact."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdk.rewards.patch import apply_diff, split_diff
from sdk.rollout.change_tools import ChangeToolBox, visible_tests
from sdk.rollout.errors import ToolError
from sdk.rollout.tools import ToolCall
from sdk.rollout.workspace import Workspace, clean_path
from sdk.tasks.change import ChangeVerifier
from tests.connectors import history_repo

TESTS = {"tests/test_ops.py": history_repo.TEST_MUL, "tests/test_text.py": history_repo.TEST_TEXT}


def verifier(files: dict[str, str] | None = None) -> ChangeVerifier:
    return ChangeVerifier(files=files or {"calc/__init__.py": "from calc.ops import add\n", "calc/ops.py": history_repo.OPS,
                                          "README.md": "calc"},
                          tests=TESTS, fail_to_pass=("tests/test_ops.py::test_mul",),
                          pass_to_pass=("tests/test_ops.py::test_add", "tests/test_text.py::test_concat"))


def call(box: ChangeToolBox, name: str, **args) -> str:
    out = box.answer(ToolCall(name=name, raw=json.dumps(args)))
    return out.content


@pytest.mark.parametrize("path", ["../etc/passwd", "calc/../../x", "/etc/passwd", "~/.ssh/id_rsa", "C:/x", "calc\\ops.py",
                                  "a\0b", ""])
def test_paths_leaving_the_repository_are_refused(path):
    with pytest.raises(ToolError):
        clean_path(path)
    box = ChangeToolBox(verifier(), None)
    for name, args in (("read_file", {"path": path}), ("edit_file", {"path": path, "new_text": "x"}),
                       ("list_dir", {"path": path}), ("search", {"text": "add", "path": path})):
        answer = call(box, name, **args)
        if path == "" and name in ("list_dir", "search"):  # "" is the root for listing and searching
            continue
        assert answer.startswith("error: ToolError:"), (name, path, answer)
    assert box.workspace.changed() == [] and box.final()["change"] == ""


def test_symlinks_in_the_repository_are_not_in_the_workspace(tmp_path):
    repo = tmp_path / "r"
    history_repo.build(repo)
    os.symlink("/etc", repo / "calc" / "etc_link")
    os.symlink("/etc/passwd", repo / "calc" / "passwd_link")
    sha = history_repo.commit(repo, {"calc/x.py": "X = 1\n"}, "links", 7)
    from connectors.history.gitrepo import GitRepo

    files, skipped = GitRepo(repo).snapshot(sha, 1 << 20)
    assert {"calc/etc_link", "calc/passwd_link"} <= set(skipped)
    box = ChangeToolBox(verifier({p: t for p, t in files.items() if p.startswith("calc/")}), None)
    for path in ("calc/etc_link/passwd", "calc/passwd_link"):
        assert call(box, "read_file", path=path).startswith(f"error: ToolError: no file {path!r}")
    assert "etc_link" not in call(box, "list_dir", path="calc")
    assert call(box, "edit_file", path="calc/etc_link/hosts", new_text="x").startswith("edited")
    assert not (Path("/etc/hosts").read_text() == "x")  # written to the in-memory copy only
    assert box.workspace.files["calc/etc_link/hosts"] == "x"


def test_edits_to_tests_and_ci_are_refused_with_the_reason():
    box = ChangeToolBox(verifier(), None)
    assert "test-side" in call(box, "edit_file", path="tests/test_ops.py", new_text="")
    assert "CI / test-runner" in call(box, "edit_file", path="tox.ini", new_text="[tox]")
    assert "CI / test-runner" in call(box, "edit_file", path="calc/sitecustomize.py", new_text="import os")
    assert box.workspace.changed() == []


def test_read_list_search_and_edit_do_what_they_say():
    box = ChangeToolBox(verifier(), None, max_calls=20)
    assert call(box, "list_dir", path=".").split("\n") == ["README.md", "calc/"]
    assert call(box, "list_dir", path="calc").split("\n") == ["__init__.py", "ops.py"]
    assert call(box, "read_file", path="calc/ops.py") == "calc/ops.py (lines 1-2 of 2)\n" + history_repo.OPS.rstrip("\n")
    assert call(box, "read_file", path="calc/ops.py", start_line=2, end_line=2).endswith("\n    return a + b")
    assert call(box, "search", text="return a") == "calc/ops.py:2: return a + b"
    assert call(box, "search", text="nowhere_xyz").startswith("no line contains")
    assert "occurs 0 times" in call(box, "edit_file", path="calc/ops.py", old_text="a * b", new_text="x")
    assert call(box, "edit_file", path="calc/ops.py", old_text="a + b", new_text="b + a").startswith("edited calc/ops.py")
    assert call(box, "edit_file", path="calc/new.py", new_text="N = 1").startswith("edited calc/new.py")
    assert box.workspace.changed() == ["calc/new.py", "calc/ops.py"]
    assert box.workspace.files["calc/ops.py"] == history_repo.OPS.replace("a + b", "b + a")
    assert box.workspace.original["calc/ops.py"] == history_repo.OPS  # the parent's text is kept for the diff


def test_the_final_diff_applies_back_to_exactly_the_workspace():
    ws = Workspace(verifier({"a.py": "x = 1\ny = 2\n", "b.py": "no newline", "c.txt": "keep\n"}))
    ws.replace("a.py", "y = 2", "y = 3")
    ws.write("b.py", "no newline\nnow two lines")
    ws.write("pkg/new.py", "def f():\n    return 1\n")
    ws.write("pkg/__init__.py", "")  # an empty new file: a header without hunks
    diff = ws.diff()
    assert "new file mode 100644" in diff and "\\ No newline at end of file" in diff and "c.txt" not in diff
    applied = apply_diff(ws.original, split_diff(diff))
    assert applied.files == ws.files and sorted(applied.changed) == ["a.py", "b.py", "pkg/__init__.py", "pkg/new.py"]


def test_run_tests_sees_pass_to_pass_tests_only():
    modules, ids = visible_tests(verifier())
    assert ids == ("tests/test_ops.py::test_add", "tests/test_text.py::test_concat")
    assert "def test_mul" not in modules["tests/test_ops.py"] and "mul(2, 3)" not in modules["tests/test_ops.py"]
    assert "def test_add" in modules["tests/test_ops.py"] and modules["tests/test_text.py"] == history_repo.TEST_TEXT
    box = ChangeToolBox(verifier(), None)  # no sandbox: run_tests is not offered
    assert "run_tests" not in box.tools and call(box, "run_tests").startswith("error: no tool named 'run_tests'")


def test_change_agent_config_is_checked():
    from pydantic import ValidationError

    from sdk.rollout.config import ToolsConfig

    assert ToolsConfig(change_agent={"enabled": True}).enabled and not ToolsConfig().enabled
    with pytest.raises(ValidationError, match="use one or the other"):
        ToolsConfig(tools=["x:y"], change_agent={"enabled": True})
    with pytest.raises(ValidationError, match="list at least edit_file"):
        ToolsConfig(change_agent={"enabled": True, "tools": []})
    with pytest.raises(ValidationError):
        ToolsConfig(change_agent={"enabled": True, "tools": ["rm_rf"]})


def test_git_history_prompt_asks_for_a_diff_or_for_tools():
    from connectors.history.source import ASK, PROMPT

    head = PROMPT.rsplit("{context}", 1)[0].format(name="n", parent="p", message="m")
    assert head + "C" + ASK["diff"] == PROMPT.format(name="n", parent="p", message="m", context="C")  # unchanged
    assert "edit_file" in ASK["tools"] and "diff" not in ASK["tools"]
