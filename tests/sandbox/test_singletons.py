"""A repository module's own instance crosses by name (issue 13, isodate 0.7.2).

``isodate.tzinfo`` holds ``UTC = Utc()`` whose ``__reduce__`` is ``(_Utc, ())``: a call of a
repository function, which the harness's restricted unpickler never makes, so the solution's
``build_tzinfo("Z")`` came back as a handle and ``datetime(..., tzinfo=handle)`` or
``datetime.combine(d, time_with_handle)`` raised TypeError. Now an object that its own repository
module (never the solution's) holds under a public top-level name crosses as that name
(``tl_cvalues.Values.singleton``), and the harness resolves it to its own object
(``tl_pickle.Trust.find``): a lookup, no call. A callable instance is never resolved that way.
"""

from __future__ import annotations

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

TZ = '''from datetime import timedelta, tzinfo


class Utc(tzinfo):
    def utcoffset(self, dt):
        return timedelta(0)

    def tzname(self, dt):
        return "UTC"

    def dst(self, dt):
        return timedelta(0)

    def __reduce__(self):
        return _Utc, ()


UTC = Utc()


def _Utc():
    return UTC


class Hook:
    def __call__(self, x):
        return x

    def __reduce__(self):
        return _hook, ()


HOOK = Hook()


def _hook():
    return HOOK
'''
PARSE = '''from datetime import time
from pkg.tz import HOOK, UTC


def build(name):
    return UTC if name == "Z" else None


def at(hour):
    return time(hour, 0, tzinfo=build("Z"))


def hook():
    return HOOK
'''
TESTS = '''from datetime import date, datetime

from pkg.parse import at, build, hook
from pkg.tz import HOOK, UTC


def test_the_singleton_is_the_tests_own():
    assert build("Z") is UTC
    assert datetime(2000, 1, 1, tzinfo=build("Z")).isoformat() == "2000-01-01T00:00:00+00:00"


def test_inside_a_value():
    assert datetime.combine(date(2000, 1, 1), at(10)).tzinfo is UTC


def test_a_callable_instance_stays_a_handle():
    got = hook()
    assert got is not HOOK and got(3) == 3
'''


def test_a_repository_singleton_crosses_by_name(sandbox):
    req = ExecRequest(solution="def build(name):\n    return UTC if name == 'Z' else None\n", entry_point="build",
                      tests={"tests/test_tz.py": TESTS}, files={"pkg/__init__.py": "", "pkg/tz.py": TZ, "pkg/parse.py": PARSE},
                      target_path="pkg/parse.py", limits=FAST)
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 3 and not res.flags


def test_trust_resolves_only_public_non_callable_instances_of_the_modules_class(tmp_path, monkeypatch):
    import sys

    from sdk.sandbox.pyruntime import RUNNER_DIR
    monkeypatch.syspath_prepend(str(RUNNER_DIR))
    import pytest
    import tl_pickle
    (tmp_path / "tzmod_x.py").write_text(TZ + "\n_PRIVATE = Utc()\nOTHER = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tzmod_x
    trust = tl_pickle.Trust([str(tmp_path)], "somewhere_else")
    assert trust.find("tzmod_x", "UTC") is tzmod_x.UTC
    for name in ("_PRIVATE", "HOOK", "OTHER", "_Utc"):
        with pytest.raises(tl_pickle.Refused):
            trust.find("tzmod_x", name)
    assert pytest.raises(tl_pickle.Refused, tl_pickle.Trust([str(tmp_path)], "tzmod_x").find, "tzmod_x", "UTC")
    sys.modules.pop("tzmod_x", None)
