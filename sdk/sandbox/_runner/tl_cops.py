"""Operations the candidate applies for the harness besides calls (split from :mod:`tl_candidate`;
stdlib only): stepping iterators, binding descriptors, MRO checks, a frozen clock."""


class Steps:
    """An iterator the harness steps one element per call (``iterh``, then ``step``): lazy, so
    infinite iterators and ``groupby``-style shared ones behave as they do in one process."""

    __slots__ = ("it",)

    def __init__(self, it):
        self.it = it


def step(obj):
    """``[next element]``, or ``[]`` once the iterator is exhausted."""
    it = obj.it if type(obj) is Steps else obj
    for value in it:
        return [value]
    return []


def frozen(clock, fn):
    """``fn()`` with the clock frozen where the test froze it (``[epoch, local offset]``, sent by
    the harness while a test fakes time), through the tests' own freezegun; as is without it."""
    try:
        import datetime
        import freezegun
        at = datetime.datetime.utcfromtimestamp(float(clock[0]))
        freezer = freezegun.freeze_time(at, tz_offset=datetime.timedelta(seconds=float(clock[1])))
    except Exception:  # noqa: BLE001 - no freezegun here: the real clock
        return fn()
    with freezer:
        return fn()


def bind(obj, inst, owner):
    """``[obj bound to inst]`` through its type's ``__get__``, or ``[]`` when it has none."""
    get = getattr(type(obj), "__get__", None)
    return [get(obj, inst, owner)] if get is not None else []


def in_mro(t, cls):
    """True when ``cls`` is in the real MRO of type ``t`` (read with ``type``'s own descriptor)."""
    return isinstance(cls, type) and cls in type.__dict__["__mro__"].__get__(t)


PLAIN = (type(None), bool, int, float, str, bytes, complex, list, tuple, dict, set, frozenset)


def eq(values, skip, a, b):
    """``a == b`` for two of the solution's objects (two handles in a test); when true, each part of
    either (instance attributes, tuple/list items: one level) of a class whose own comparison answers
    for a stranger is reported (``values.probe_lies``: ``always_equal``): a dataclass of the solution's
    whose fields equal anything otherwise passed ``box(2, 3) == Box(2, 3)`` unseen. ``skip``: the
    types of a test's objects (never probed here)."""
    got = a == b
    if got is True:
        for obj in (a, b):
            state = getattr(obj, "__dict__", None)
            parts = (list(state.values()) if type(state) is dict else []) + (list(obj) if type(obj) in (list, tuple) else [])
            for part in parts[:64]:
                if type(part) not in PLAIN and type(part) not in skip:
                    values.probe_lies(part, type(part))
    return got


# what a test may change in place on a module-level container of the solution's module (tl_rmodule)
GSET = {set: frozenset({"add", "discard", "remove", "update", "clear", "difference_update",
                        "intersection_update", "symmetric_difference_update"}),
        dict: frozenset({"__setitem__", "__delitem__", "update", "pop", "clear", "setdefault"}),
        list: frozenset({"__setitem__", "__delitem__", "append", "extend", "insert", "remove", "pop", "clear",
                         "__replace__"})}


def gset(target, method, args):
    """Apply to the solution's module-level ``target`` the change a test made to its copy:
    ``method`` of :data:`GSET` (``__replace__``: the list's new contents), or, without one, an item
    set (two arguments) or deleted (one). Returns None: nothing of the solution's goes back."""
    if method is None:
        method = "__setitem__" if len(args) == 2 else "__delitem__"
    if type(target) not in GSET or method not in GSET[type(target)]:
        raise TypeError("cannot mirror %s on a %s" % (method, type(target).__name__))
    if method == "__replace__":
        target[:] = args[0]
    else:
        getattr(target, method)(*args)
