"""The harness's pickle path at C speed (issue 14): ``tl_pickle.loads_restricted`` runs a dry run
over stand-ins and then the C unpickler, and must keep :class:`tl_pickle.Restricted`'s guarantee:
only trusted classes, and no change to an object the pickle did not make (a class, an enum
member, a function it names, an object held by a persistent id), while honest values decode
exactly as the pure-Python loader decodes them."""

from __future__ import annotations

import base64
import collections
import datetime
import decimal
import sys

import pytest

REPO = '''import dataclasses, enum, typing

@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0

class Color(enum.Enum):
    RED = 1
    BLUE = 2

class Slotted:
    __slots__ = ("a", "b")
    def __init__(self, a, b):
        self.a, self.b = a, b
    def __eq__(self, other):
        return type(other) is Slotted and (self.a, self.b) == (other.a, other.b)

class Stateful:
    def __init__(self, v):
        self.v = v
    def __getstate__(self):
        return {"v": self.v, "n": 1}
    def __setstate__(self, state):
        self.v, self.restored = state["v"], state["n"]
    def __eq__(self, other):
        return type(other) is Stateful and self.v == other.v

class Pair(typing.NamedTuple):
    a: int
    b: str
'''


@pytest.fixture()
def env(tmp_path, monkeypatch):
    from sdk.sandbox.pyruntime import RUNNER_DIR
    (tmp_path / "fastrepo_mod.py").write_text(REPO)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(RUNNER_DIR))
    import fastrepo_mod
    import tl_pickle
    yield tl_pickle, fastrepo_mod, tl_pickle.Trust([str(tmp_path)], "solution")
    sys.modules.pop("fastrepo_mod", None)


def _enc(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


BUILD_EQ = b"N}\x8c\x06__eq__cbuiltins\nbool\ns\x86b."   # BUILD (None, {"__eq__": bool}) on the top
HANDLE = b"\x8c\x01rK\x05\x8c\x01x\x87Q"                    # persistent id ("r", 5, "x"): the harness's object
HOSTILE = {
    "build_on_a_class": b"\x80\x04cfastrepo_mod\nPoint\n" + BUILD_EQ,
    "build_through_the_memo": b"\x80\x04cfastrepo_mod\nPoint\n\x940h\x00" + BUILD_EQ,
    "build_on_a_standard_class": b"\x80\x04ccollections\nOrderedDict\n" + BUILD_EQ,
    "build_on_an_enum_member_made_by_a_call": b"\x80\x04cfastrepo_mod\nColor\nK\x01\x85RN}\x8c\x05extra\x8c\x01xs\x86b.",
    "build_on_a_named_function": b"\x80\x04ccopyreg\n_reconstructor\nN}\x8c\x05extra\x8c\x01xs\x86b.",
    "setitems_on_a_class": b"\x80\x04cfastrepo_mod\nPoint\n(\x8c\x01aK\x01u.",
    "appends_on_a_handle": b"\x80\x04" + HANDLE + b"(K\x01K\x02e.",
    "append_on_a_handle": b"\x80\x04" + HANDLE + b"K\x01a.",
    "setitem_on_a_handle": b"\x80\x04" + HANDLE + b"K\x01K\x02s.",
    "additems_on_a_handle": b"\x80\x04" + HANDLE + b"(K\x01\x90.",
    "build_on_a_handle": b"\x80\x04" + HANDLE + b"}\x8c\x01aK\x01sb.",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_object_the_pickle_did_not_make_is_changed(env, name):
    tl_pickle, repo, trust = env
    victim = [7]
    before = (repo.Point.__dict__.get("__eq__"), dict(vars(repo.Color.RED)), dict(collections.OrderedDict.__dict__))
    with pytest.raises(tl_pickle.Refused) as info:
        tl_pickle.loads_restricted(_enc(HOSTILE[name]), trust, lambda pid: victim)
    assert info.value.hostile
    # the pure-Python loader refuses it too (the fast path keeps its guarantee, not a weaker one)
    with pytest.raises(tl_pickle.Refused):
        tl_pickle.Restricted(HOSTILE[name], trust, lambda pid: victim).load()
    assert victim == [7]
    assert (repo.Point.__dict__.get("__eq__"), dict(vars(repo.Color.RED)), dict(collections.OrderedDict.__dict__)) == before
    assert repo.Point(1) != repo.Point(2)


def test_untrusted_globals_are_refused_before_anything_runs(env):
    tl_pickle, _, trust = env
    for raw in (b"cos\nsystem\n(S'true'\ntR.", b"cbuiltins\ngetattr\n.", b"csolution\nadd\n."):
        with pytest.raises(tl_pickle.Refused):
            tl_pickle.loads_restricted(_enc(raw), trust, lambda pid: None)


def test_honest_values_decode_as_the_checked_loader_decodes_them(env):
    tl_pickle, repo, trust = env
    handle = object()
    cyclic: list = [1]
    cyclic.append(cyclic)
    values = [
        [repo.Point(i, i / 2) for i in range(300)],
        {str(i): repo.Point(i) for i in range(50)},
        [repo.Color.RED, repo.Color.BLUE, repo.Color(2)],
        repo.Slotted(1, "x"), repo.Stateful(3), repo.Pair(1, "a"),
        [datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc), decimal.Decimal("1.10"),
         collections.OrderedDict(a=1), collections.Counter("aab"), collections.deque([1, 2]), {1, 2}, frozenset({3})],
    ]
    for value in values:
        text = tl_pickle.dumps(value, lambda obj: None)
        fast = tl_pickle.loads_restricted(text, trust, lambda pid: handle)
        slow = tl_pickle.Restricted(base64.b64decode(text), trust, lambda pid: handle).load()
        assert fast == slow == value and type(fast) is type(value)
    assert tl_pickle.loads_restricted(tl_pickle.dumps(repo.Color.RED, lambda o: None), trust, None) is repo.Color.RED
    assert tl_pickle.loads_restricted(tl_pickle.dumps(repo.Stateful(4), lambda o: None), trust, None).restored == 1
    # persistent ids and cycles keep their identities
    text = tl_pickle.dumps([handle, handle, cyclic], lambda obj: ("r", 1, "object") if obj is handle else None)
    got = tl_pickle.loads_restricted(text, trust, lambda pid: handle)
    assert got[0] is handle and got[1] is handle and got[2][1] is got[2]


def test_a_broken_pickle_fails_as_with_the_checked_loader(env):
    tl_pickle, _, trust = env
    import pickle
    for raw in (b"\x80\x04(K\x01", b"\x80\x04K\x01K\x02s.", b"garbage"):
        with pytest.raises((pickle.UnpicklingError, ValueError, IndexError, TypeError, EOFError)):
            tl_pickle.loads_restricted(_enc(raw), trust, lambda pid: None)
