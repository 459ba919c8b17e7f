"""Module-level state a test changes reaches the solution's module (issue 13, inflection 0.5.1).

inflection's ``test_uncountable_word_is_not_greedy`` does ``inflection.UNCOUNTABLES.add("ors")`` and
then expects ``pluralize("ors") == "ors"``: the tests hold a copy of the set (plain data crosses by
value), so the change must be mirrored to the solution's own set (``tl_rmodule._mirrored``, op
``gset``). The tests' copy decides what the call returns or raises; the candidate's answer to the
mirror is never read, so nothing of the solution's comes back through it.
"""

from __future__ import annotations

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

MOD = '''
UNCOUNTABLES = {"rice", "fish"}
ORDER = [3, 1, 2]
TABLE = {"a": 1}


def plural(word):
    return word if word in UNCOUNTABLES else word + "s"


def seen():
    return [sorted(UNCOUNTABLES), list(ORDER), dict(TABLE)]
'''
SOLUTION = '''def plural(word):
    return word if word in UNCOUNTABLES else word + "s"
'''
TESTS = '''import pytest

import pkg
from pkg import plural, seen


def test_add_then_remove_reaches_the_solution():
    pkg.UNCOUNTABLES.add("ors")
    try:
        assert plural("ors") == "ors"
    finally:
        pkg.UNCOUNTABLES.remove("ors")
    assert plural("ors") == "orss"


def test_the_tests_copy_decides_errors_and_results():
    with pytest.raises(KeyError):
        pkg.UNCOUNTABLES.remove("never")
    gone = pkg.UNCOUNTABLES.pop()
    assert gone in ("rice", "fish") and plural(gone) == gone + "s"
    pkg.UNCOUNTABLES.update(iter([gone, "data"]))
    assert plural("data") == "data" and plural(gone) == gone


def test_lists_and_dicts():
    pkg.ORDER.sort(reverse=True)
    pkg.ORDER.append(0)
    assert pkg.ORDER.pop(0) == 3
    pkg.TABLE.update(b=2)
    pkg.TABLE.setdefault("c", 3)
    assert pkg.TABLE.popitem() == ("c", 3)
    pkg.TABLE["d"] = 4
    del pkg.TABLE["a"]
    assert seen() == [["data", "fish", "rice"], [2, 1, 0], {"b": 2, "d": 4}]
'''


def _req(solution: str = SOLUTION, tests: str = TESTS, module: str = MOD) -> ExecRequest:
    return ExecRequest(solution=solution, entry_point="plural", tests={"tests/test_pkg.py": tests},
                       files={"pkg/__init__.py": module}, target_path="pkg/__init__.py", limits=FAST)


def test_changes_to_module_level_containers_reach_the_solution(sandbox):
    res = sandbox.run_one(_req())
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 3 and not res.flags


HOSTILE = '''class Loud(set):
    def add(self, x):
        raise SystemExit(0)


UNCOUNTABLES = Loud({"rice", "fish"})


def plural(word):
    return word if word in UNCOUNTABLES else word + "s"
'''


def test_a_container_subclass_is_never_called_and_decides_nothing(process_sandbox):
    """The module's UNCOUNTABLES is a set subclass: it crosses as a plain set, the mirror is refused
    in the candidate (only an exact set, dict or list is changed there: no method of the module's
    own class runs), and the test's own copy decides."""
    tests = ("import pkg\nfrom pkg import plural\n\n\ndef test_add():\n    pkg.UNCOUNTABLES.add('ors')\n"
             "    assert 'ors' in pkg.UNCOUNTABLES\n    assert plural('ors') == 'orss'\n")
    res = process_sandbox.run_one(_req(SOLUTION, tests, HOSTILE))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert "exit_trick" not in res.flags
