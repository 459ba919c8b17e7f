"""Stand-ins during a change task's test call (split from :mod:`tl_rguard`, issue 14; stdlib and pytest only).

A layer, never a boundary (see :mod:`tl_rguard`): state is bound as default arguments.

- Signals (:func:`signals`): a handler installed through ``signal.signal`` is given a
  :class:`Withheld` in place of the interrupted frame (whose ``f_back`` is the running test's);
  reading it flags. A ``_signal`` (or ``_imp``) module made afresh (``importlib`` after a
  ``sys.modules`` pop, ``importlib.util.module_from_spec``, ``imp.init_builtin``, ``_imp.create_builtin``:
  all make builtin modules through ``_imp.create_builtin``) is the loaded one, whose ``signal`` is the
  wrapper (:func:`keep_builtins`); the original ``_signal.signal`` sits in the wrapper's defaults, and
  reading a runner function's ``__defaults__`` from repository code is flagged (:mod:`tl_witness`).
  Not covered: an extension module of that name loaded from a file (``_imp.create_dynamic``).
- pytest's objects (:func:`hide`): during each test's call phase a :class:`Withheld` stands in
  ``sys.meta_path`` for the assertion rewriter and for its ``config`` and ``session`` (reading them
  flags), ``_pytest.assertion.util`` holds no config or item (its ``_reprcompare`` gives pytest's
  diff from values read before the call; a conftest's ``pytest_assertrepr_compare`` is not called),
  and ``PYTEST_CURRENT_TEST`` names the test without its parameters. The test modules are guarded
  for the call too (:mod:`tl_rmods`, which says what it leaves open).
"""

import os
import sys
import types

from tl_rmods import withhold

FRESH = ("_signal", "_imp")   # builtin modules never made afresh once armed (keep_builtins)


class Trusted(Exception):
    """Raised by the witness's hook on ``tl.lib`` when an ``__eq__`` is genuine library or test code, and
    on ``tl.mod`` when a guarded test module's attribute is read for the tests (:mod:`tl_rmods`)."""


class Withheld:
    """What stands where a frame or pytest's objects were (see :func:`signals`, :func:`hide`): a
    finder that finds nothing; reading any other attribute that is not a dunder flags
    ``runner_tampering`` (``tl.flag``, which can only hurt the candidate) and raises AttributeError."""

    __slots__ = ("_tl_what",)

    def __init__(self, what):
        object.__setattr__(self, "_tl_what", what)

    def __getattribute__(self, name, _get=object.__getattribute__, _audit=sys.audit, _type=type,
                      _open=frozenset({"find_spec", "find_module", "invalidate_caches", "find_distributions"})):
        if _type(name) is str and (name[:2] == "__" or name in _open):
            return _get(self, name)
        _audit("tl.flag", "runner_tampering", "%s read while a test ran (.%s)" % (_get(self, "_tl_what"), str(name)[:40]))
        raise AttributeError(name)

    def find_spec(self, *args, **kwargs):
        """Finds nothing (the import system asks every finder)."""
        return None

    def invalidate_caches(self):
        """Nothing to invalidate."""
        return None

    def __repr__(self):
        return "<withheld>"


def signals():
    """Wrap ``_signal.signal``/``getsignal`` (which ``signal.signal`` calls) so that every handler
    runs with ``frame=None``; ``getsignal`` and the previous handler come back unwrapped."""
    import _signal
    import signal as std

    class Handler:
        """A handler installed by the tests' process: the interrupted frame is not handed on."""

        __slots__ = ("fn",)

        def __init__(self, fn):
            self.fn = fn

        def __call__(self, signum, frame, _stand_in=Withheld("the frame a signal handler is given")):
            return self.fn(signum, _stand_in)

    def unwrap(h, _type=type, _cls=Handler, _fn=Handler.fn):
        return _fn.__get__(h) if _type(h) is _cls else h

    def install(signalnum, handler, _real=_signal.signal, _cls=Handler, _unwrap=unwrap, _type=type):
        if callable(handler) and _type(handler) is not _cls:
            handler = _cls(handler)
        return _unwrap(_real(signalnum, handler))

    def getsignal(signalnum, _real=_signal.getsignal, _unwrap=unwrap):
        return _unwrap(_real(signalnum))

    _signal.signal, _signal.getsignal = install, getsignal
    keep_builtins()
    for name in ("signal", "getsignal"):
        fn = getattr(std, name, None)
        if type(fn) is types.FunctionType and "__wrapped__" in vars(fn):
            fn.__wrapped__ = install if name == "signal" else getsignal


def keep_builtins(_fresh=FRESH):
    """Wrap ``_imp.create_builtin`` so that the modules :data:`FRESH` are never made afresh: asked for
    one, it hands back the module loaded now (see the module docstring). The name is read once, as an
    exact str, and the real function is given a spec whose name cannot change between two reads."""
    import _imp
    import _signal  # noqa: F401 - loaded before it is held
    from importlib.machinery import BuiltinImporter, ModuleSpec

    def create_builtin(spec, _real=_imp.create_builtin, _held=types.MappingProxyType({n: sys.modules[n] for n in _fresh}),
                       _spec=ModuleSpec, _loader=BuiltinImporter, _type=type, _str=str):
        name = spec.name
        if _type(name) is not _str:
            raise TypeError("spec.name must be a str")
        if name in _held:
            return _held[name]
        plain = _type(spec) is _spec and not {"name", "__getattribute__", "__getattr__"} & set(_spec.__dict__)
        return _real(spec if plain else _spec(name, _loader, origin="built-in"))
    _imp.create_builtin = create_builtin


def _PYTEST_SLOTS():   # noqa: N802 - other holders of pytest's config or plugin manager
    from _pytest.debugging import pytestPDB
    from _pytest.mark.structures import MARK_GEN
    return ((MARK_GEN, "_config"), (pytestPDB, "_config"), (pytestPDB, "_pluginmanager"))


def _plain_reprcompare(config):
    """pytest's explanation of a failed comparison (``util.assertrepr_compare``: the diff) from values
    read off ``config`` now, holding no config, item or hook; ``None`` when they cannot be read (no
    diff, as without pytest's hook). Conftest ``pytest_assertrepr_compare`` hooks are not called."""
    from _pytest.assertion import util
    from _pytest.config import Config
    try:
        verbose = int(config.get_verbosity(Config.VERBOSITY_ASSERTIONS))
        style, rewrite = config.getini("assertion_text_diff_style"), config.getvalue("assertmode") == "rewrite"
    except Exception:  # noqa: BLE001 - an older or other pytest: no diff
        return None

    def reprcompare(op, left, right, _compare=util.assertrepr_compare, _plain=util.dummy_highlighter):
        lines = []
        for line in _compare(op=op, left=left, right=right, verbose=verbose, highlighter=_plain,
                             assertion_text_diff_style=style):
            lines.append(line.replace("\n", "\\n"))
            if len(lines) >= 200:   # the runner keeps 2,000 characters of a message
                break
        res = "\n~".join(lines) if lines else None
        return res.replace("%", "%%") if res and rewrite else res
    return reprcompare


def hide(_folder=None):
    """Take pytest's session, config and item out of the places repository code can reach without a
    frame, and guard the test modules under ``_folder`` (bound by :func:`tl_witness.arm`; see the module
    docstring), for one test's call phase; returns ``undo()``."""
    from _pytest.assertion import util
    from _pytest.assertion.rewrite import AssertionRewritingHook
    hooks = {id(h): (h, Withheld("pytest's import hook")) for h in sys.meta_path if type(h) is AssertionRewritingHook}
    sys.meta_path[:] = [hooks[id(h)][1] if id(h) in hooks else h for h in sys.meta_path]
    held = [(h, {k: vars(h)[k] for k in ("config", "session") if k in vars(h)}) for h, _ in hooks.values()]
    for h, attrs in held:
        vars(h).update({k: Withheld("pytest's " + k) for k in attrs})
    kept = (util._reprcompare, util._assertion_pass, util._config)
    util._assertion_pass = util._config = None
    util._reprcompare = _plain_reprcompare(kept[2]) if kept[0] is not None else None
    slots = [(o, k) for o, k in _PYTEST_SLOTS() if k in vars(o)]   # found by a walk from sys.modules (bench)
    old = [(o, k, vars(o)[k]) for o, k in slots]
    for o, k in slots:
        setattr(o, k, None)
    env, mods = os.environ.get("PYTEST_CURRENT_TEST"), withhold(_folder)
    if env is not None:
        path, _, rest = env.partition("::")
        os.environ["PYTEST_CURRENT_TEST"] = path + "::" + rest.split("[", 1)[0].split(" ", 1)[0] + " (call)"

    def undo():
        for h, attrs in held:
            vars(h).update(attrs)
        back = {id(w): h for h, w in hooks.values()}
        sys.meta_path[:] = [back.get(id(f), f) for f in sys.meta_path]
        sys.meta_path[:0] = [h for h, _ in hooks.values() if not any(f is h for f in sys.meta_path)]
        util._reprcompare, util._assertion_pass, util._config = kept
        for o, k, v in old:
            setattr(o, k, v)
        if env is not None:
            os.environ["PYTEST_CURRENT_TEST"] = env
        mods()
    return undo
