"""A hole found on validators 0.36.0 (new-user round), closed in issue 14's last round.

When the target module is a decorator's own module (validators' ``utils.py``: ``validator`` and its
helper ``_func_args_as_dict``), the candidate's module runs apart from the tests, and the decorated
function it is handed from another module arrived as a stand-in: introspecting it failed
(``func.__code__`` -> ``AttributeError: __code__``), and an instance of the solution's exception class
that it *returned* (validators' ``ValidationError``) was no instance of the tests' copy of that class, so
the *reference* failed its tests and the task was quarantined ``reference_fails`` (validators:
``_func_args_as_dict``, 67 of 153 tests). Now a plain function of a repository module that holds no
tests shows its code object (``tl_values.Codec.code_of``: marshal, plain data; a test's own function
still refuses, its constants being the expected values), and ``isinstance`` against a mirrored
exception class asks the candidate for its handles (``tl_rmodule._Mirror``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.config import SandboxConfig
from sdk.sandbox.contract import ExecRequest, Limits

FILES = {
    "dec/__init__.py": '"""Dec."""\nfrom .utils import Failure\nfrom .checks import even\n',
    "dec/utils.py": '''"""Utils."""
from functools import wraps


class Failure(Exception):
    """Falsy result of a failed check."""

    def __init__(self, args_dict):
        self.args_dict = args_dict

    def __bool__(self):
        return False


def _as_dict(func, *args):
    """The arguments by name."""
    return dict(zip(func.__code__.co_varnames, args))


def check(func):
    """Decorator: ``func``'s falsy result becomes a :class:`Failure`."""
    @wraps(func)
    def wrapper(*args):
        return True if func(*args) else Failure(_as_dict(func, *args))
    return wrapper
''',
    "dec/checks.py": '"""Checks."""\nfrom .utils import check\n\n\n@check\ndef even(value):\n    """Whether ``value`` is even."""\n'
                     '    return value % 2 == 0\n',
    "tests/test_checks.py": '''from dec import Failure, even


def test_even():
    assert even(2) is True


def test_odd():
    result = even(3)
    assert isinstance(result, Failure)
    assert result.args_dict == {"value": 3}
''',
}


# the candidate asks for the code of a function the test defined (its constants would be the answers)
OWN_TEST = """import pytest

from dec.utils import _as_dict


def test_a_test_function_does_not_show_its_code():
    def secret(value):
        return value == 12345
    with pytest.raises(AttributeError):
        _as_dict(secret, 3)
"""


def test_a_helper_that_introspects_a_function_from_another_module_passes_as_its_own_reference(tmp_path):
    sandbox_mod = pytest.importorskip("sdk.sandbox")
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = PytestSuiteSource({"path": str(tmp_path), "package": "dec"}, Path(tmp_path), "dec").read()
    (task,) = [t for t in result.tasks if t.verifier.entry_point == "_as_dict"]
    v = task.verifier
    box = sandbox_mod.make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        (res, own) = box.run([ExecRequest(framework=v.framework, solution=task.reference, tests=tests, files=v.files,
                                          target_path=v.target_path, entry_point=v.entry_point, prelude=v.prelude,
                                          limits=Limits(timeout_s=v.timeout_s))
                              for tests in (v.tests, {**v.tests, "tests/test_own.py": OWN_TEST})])
    finally:
        box.close()
    assert res.all_passed, res.detail[:300]
    assert own.all_passed and len(own.tests) == len(res.tests) + 1, own.detail[:300]   # a test's own function keeps its code
