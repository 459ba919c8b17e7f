"""What a long-lived warm supervisor may not carry from one request into the next (issue 14).

The warm supervisor (:mod:`tl_supervisor`) runs the task's test code, so a test can change the
process that judges every later task of its slot: an environment variable, a builtin, the
recursion limit, a signal disposition, a patched stdlib function, a class attribute, a thread
left running. :class:`State` takes a fingerprint of that process before its first request and
compares it after each one; any difference, and any audited event of :data:`EVENTS` during the
request, make the supervisor exit after its answer, so the next request gets a fresh one forked
from the server (which never runs a test). Checked, each time:

* every module in ``sys.modules`` (none added or removed) and every name bound in its namespace
  (the same object, by identity: ``builtins``, ``os``, ``json.dumps``...), and likewise every
  attribute of every class the server holds (``JSONDecoder.decode = ...``; :func:`prepare`);
* in place: ``os.environ``, ``sys.path``, ``sys.meta_path``, ``sys.path_hooks``, ``warnings.filters``,
  ``copyreg.dispatch_table``;
* the recursion limit, the int-to-str digit limit, the switch interval, the trace and profile
  functions, every signal's disposition, the blocked signal mask, the three interval timers,
  the umask, every resource limit, the niceness, ``gc``'s thresholds and state, the locale, the
  time zone, the threads of the process (one) and its open descriptors (the same files);
* audited during the request (a PEP 578 hook of the supervisor): an audit hook added, any
  ``ctypes`` use, ``putenv``/``unsetenv``, a resource limit set, a process started (fork,
  spawn, exec, ``subprocess``), and a function's code or defaults replaced (``__code__``,
  ``__defaults__``, ``__kwdefaults__``) where the function belongs to a module loaded before.

Also compared by tag: the ``__dict__`` of every instance a module namespace holds (an attribute
set on ``sys.stdout``). Not checked: mutations inside other objects (the contents of a module-level
container such as a cache, an instance reached only through another object, a slot attribute),
which Python cannot enumerate cheaply; a test that wants to change later verdicts through them can. The tests are
the task's own, never the model's: the candidate (the solution) runs in another process and
reaches this one only through values on a pipe.
"""

import gc
import operator
import os
import resource
import signal
import sys
import time

import _signal

try:
    import _locale
except ImportError:   # built without locale support: nothing to compare
    _locale = None

EVENTS = {"sys.addaudithook", "os.putenv", "os.unsetenv", "resource.setrlimit", "resource.prlimit", "os.fork",
          "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "subprocess.Popen", "sys.setprofile",
          "sys.settrace", "_thread.start_new_thread", "os.setpriority", "os.nice"}
PATCH = ("object.__setattr__", "object.__delattr__")
FUNCTION = type(lambda: None)
LIMITS = [getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")]
SIGNALS = [s for s in range(1, signal.NSIG) if s not in (signal.SIGKILL, signal.SIGSTOP)]
# the C function, bound once here (in the server, before any test): ``signal.getsignal`` wraps each
# answer in an enum (27 of the fingerprint's 55 us, 62 signals) and looks ``_signal.getsignal`` up at
# each call; a test that rebinds ``_signal.getsignal`` changes that namespace's tag, seen first
GETSIGNAL = _signal.getsignal


HEAPTYPE, IMMUTABLE = 1 << 9, 1 << 8
CLASSES = []   # the namespaces (real dicts) of the classes alive in the warm server: prepare()


def prepare():
    """Find, once in the warm server (where no test ever runs), the namespace of every class
    whose attributes can be set: a class's ``__dict__`` is a new read-only proxy at each access
    (489 classes, 4 ms to compare through them), its real dict is one of ``gc.get_referents``
    (the same comparison as a module's: ~0.1 ms). Python 3.11 audits no class attribute write."""
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, type) and obj.__flags__ & HEAPTYPE and not obj.__flags__ & IMMUTABLE:
            proxy = obj.__dict__
            for ref in gc.get_referents(obj):
                if type(ref) is dict and len(ref) == len(proxy) and ref.keys() == proxy.keys():
                    found.append(ref)
                    break
    CLASSES[:] = found
    return len(found)


class Tags:
    """The version tags of ``dicts``, all read in one C call. CPython 3.11 gives every dict a
    ``ma_version_tag`` that changes on each insertion, replacement or deletion (PEP 509), at byte
    24 of the object after ``ma_used`` (byte 16): one memory view spanning them and an
    ``itemgetter`` of their offsets read ~550 namespaces in about 10 us, where comparing their
    ~10,000 entries costs 1.3 ms. :meth:`works` checks the layout on live dicts first."""

    def __init__(self, dicts):
        import ctypes
        self.dicts = list(dicts)   # kept alive: their addresses are read
        addrs = [id(d) for d in self.dicts]
        self.base = min(addrs) + 16
        buf = (ctypes.c_char * (max(addrs) + 32 - self.base)).from_address(self.base)
        self.view = memoryview(buf).cast("B").cast("Q")
        self.read = operator.itemgetter(*[(a + 24 - self.base) // 8 for a in addrs])

    def works(self):
        """True when the layout is the one assumed: each dict's size at byte 16, and a write to
        a probe dict changes the tag at byte 24."""
        used = operator.itemgetter(*[(id(d) + 16 - self.base) // 8 for d in self.dicts])(self.view)
        if list(used) != [len(d) for d in self.dicts]:
            return False
        probe = self.dicts[-1]
        before = self.read(self.view)[-1]
        probe["tl_probe"] = None
        del probe["tl_probe"]
        return self.read(self.view)[-1] != before


class State:
    """The fingerprint of this process (see the module doc): :meth:`hook` is its audit hook,
    :meth:`changed` tells whether (and how) the process differs from when the object was made."""

    def __init__(self):
        self.dirty = []
        self.names = set(sys.modules)
        self.modules = list(sys.modules.values())
        self.spaces = [m.__dict__ for m in self.modules if type(getattr(m, "__dict__", None)) is dict]   # not ``typing.io``
        env = getattr(os.environ, "_data", None)
        copyreg = sys.modules.get("copyreg")
        self.dicts = [sys.modules, *self.spaces, *CLASSES, *_instance_dicts(self.spaces)]
        self.dicts += [d for d in (env, getattr(copyreg, "dispatch_table", None)) if type(d) is dict]
        self.tags = self.version = None
        try:
            tags = Tags(self.dicts + [{}])
            if tags.works():
                self.tags, self.version = tags, tags.read(tags.view)
        except Exception:  # noqa: BLE001 - another interpreter: compare the entries instead
            self.tags = None
        if self.tags is None:
            self.entries = [(d, list(d), list(d.values())) for d in self.dicts]
        self.lists = self._lists()
        self.values = self._values()

    def hook(self, event, args):
        """PEP 578 hook: an event that changes the process outside what :meth:`changed` compares."""
        if event in EVENTS or event.startswith("ctypes."):
            self.dirty.append(event)
        elif event in PATCH and args and type(args[0]) is FUNCTION and args[0].__module__ in self.names:
            self.dirty.append("%s %s" % (event, args[1] if len(args) > 1 else ""))

    def _lists(self):
        warnings = sys.modules.get("warnings")
        return [list(sys.path), list(sys.meta_path), list(sys.path_hooks), list(getattr(warnings, "filters", ()))]

    @staticmethod
    def _values():
        mask = os.umask(0o022)
        os.umask(mask)
        fds = []
        for name in sorted(os.listdir("/proc/self/fd"), key=int):
            try:
                st = os.fstat(int(name))
                fds.append((name, st.st_dev, st.st_ino))
            except OSError:
                pass   # the descriptor of the listing itself
        return (sys.getrecursionlimit(), sys.get_int_max_str_digits(), sys.getswitchinterval(), sys.gettrace(),
                sys.getprofile(), list(map(GETSIGNAL, SIGNALS)), signal.pthread_sigmask(signal.SIG_BLOCK, []),
                [signal.getitimer(t) for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)], mask,
                [resource.getrlimit(r) for r in LIMITS], os.getpriority(os.PRIO_PROCESS, 0), gc.isenabled(),
                gc.get_threshold(), _current_locale(), time.tzname, time.timezone, len(os.listdir("/proc/self/task")), fds)

    def _namespace(self):
        """Which namespace changed (text), or None."""
        if self.tags is not None:
            now = self.tags.read(self.tags.view)
            if now == self.version:
                return None
            d = self.dicts[next(i for i, (a, b) in enumerate(zip(now, self.version)) if a != b)]
        else:
            is_ = operator.is_
            d = next((d for d, keys, values in self.entries if len(d) != len(keys) or list(d) != keys
                      or not all(map(is_, d.values(), values))), None)
            if d is None:
                return None
        return "sys.modules" if d is sys.modules else "namespace of %s" % (d.get("__name__") or d.get("__module__"))

    def changed(self):
        """None when nothing checked changed since this object was made and no audited event of a
        request marked the process; else what changed first (text)."""
        if self.dirty:
            return "audited: " + ", ".join(self.dirty[:3])
        if len(sys.modules) != len(self.modules):
            return "modules: %s" % ", ".join(sorted(set(sys.modules) ^ self.names)[:5])
        if not all(map(operator.is_, sys.modules.values(), self.modules)):
            return "modules replaced"
        where = self._namespace()
        if where:
            return where
        if not _equal(self._lists(), self.lists):
            return "sys.path, sys.meta_path, sys.path_hooks or warnings.filters"
        now = self._values()
        if now != self.values:
            return "process state %s" % [i for i, (a, b) in enumerate(zip(now, self.values)) if a != b]
        return None


def _instance_dicts(spaces):
    """The real ``__dict__`` of every instance a module namespace holds (``sys.stdout``,
    ``logging.root``; not modules, classes or functions), read without the object's own
    ``__getattribute__``: an attribute set on one (``sys.stdout.x = 1``) changes its tag.
    Returns a list of dicts, each once."""
    skip = (type, FUNCTION, type(sys), type(len))
    seen, found = set(), []
    for space in spaces:
        for value in list(space.values()):
            if isinstance(value, skip) or id(value) in seen:
                continue
            try:
                d = object.__getattribute__(value, "__dict__")
            except Exception:  # noqa: BLE001 - no instance dict (slots, C types) or a refusing descriptor
                continue
            if type(d) is dict:
                seen.add(id(value))
                found.append(d)
    return found


def _equal(now, then):
    """The listed containers hold the same items (by identity for objects, by value for text)."""
    return all(len(a) == len(b) and all(x is y or (type(x) is str and type(y) is str and x == y) for x, y in zip(a, b))
               for a, b in zip(now, then))


def _current_locale():
    try:
        return _locale.setlocale(_locale.LC_ALL, None)
    except Exception:  # noqa: BLE001 - no locale support: nothing to compare
        return None
