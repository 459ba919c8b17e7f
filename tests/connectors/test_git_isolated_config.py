"""The git-history source runs git with no user or system configuration: a ``~/.gitconfig`` whose
``diff.noprefix`` drops the ``a/`` ``b/`` prefixes, or whose ``diff.external`` runs a program, changed
the diffs tasks are made of (HOME was passed to git)."""

from __future__ import annotations

import subprocess

from connectors.history.gitrepo import GitRepo


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True, env={"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"})


def test_user_gitconfig_changes_nothing(tmp_path, monkeypatch):
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    marker = tmp_path / "external-ran"
    (home / ".gitconfig").write_text(f"[diff]\n\tnoprefix = true\n\texternal = touch {marker}\n"
                                     "[log]\n\tshowSignature = true\n[core]\n\tquotepath = on\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    _git(repo, "add", "calc.py")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    _git(repo, "commit", "-q", "-am", "second")
    git = GitRepo(repo)
    (first, ) = git.commits()
    patch = git.diff(first.parent, first.sha, ["calc.py"])
    assert patch.startswith("diff --git a/calc.py b/calc.py") and "+++ b/calc.py" in patch
    assert [c.path for c in git.changes(first.parent, first.sha)] == ["calc.py"]
    assert first.subject == "second" and not marker.exists()
