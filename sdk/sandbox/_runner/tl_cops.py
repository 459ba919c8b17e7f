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
