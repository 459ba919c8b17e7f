"""Test-suite connectors: a company's tests and public benchmarks → verifiable RL tasks.

Kept together because they share one job — turn code plus the tests that judge it into
:class:`~sdk.tasks.records.Task` records whose verifier runs in the sandbox — and one set of
helpers (source parsing, pytest collection):

- ``pytest_suite`` — :class:`PytestSuiteSource`: each tested function of a package becomes a
  "write this function" task verified by the tests that cover it; ``pytest_collect`` runs the
  suite once with the ``_pytest_trace`` plugin to map tests to functions; ``pysource`` parses
  modules (imports, targets, stubs) with ``ast``.
- ``junit`` / ``junit_repair`` — JUnit XML from any CI → test-case records → repair tasks
  ("make this failing test pass").
- ``file_tasks`` — JavaScript/TypeScript, Java and Go repositories → one task per tested file
  (source ``type: files``).
- ``jsonl_bench`` — HumanEval / MBPP style JSONL benchmarks.

Import the classes from their modules (``connectors.suites.pytest_suite:PytestSuiteSource``);
this package imports nothing, so loading one connector does not load the others.
"""
