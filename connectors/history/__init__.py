"""Repository-history connectors: a repository's commits → change tasks (issue 17).

- ``source`` — :class:`GitHistorySource` (the ``git_history`` source type): commits that change
  source and tests become "make this change" tasks judged by fail-to-pass and pass-to-pass tests;
- ``mine`` — runs a commit's tests at its parent and at the commit in the sandbox and finds
  which tests decide it (flaky ones left out);
- ``gitrepo`` — the git CLI: the first-parent line, what a commit changed, text files at a commit.

Import the classes from their modules (``connectors.history.source:GitHistorySource``); this
package imports nothing.
"""
