"""The candidate process: the only process that runs the solution's code (stdlib only).

Forked by the harness (:mod:`tl_harness`) *before* the harness reads the request, so its memory
never held a test, a nonce or an earlier request. It keeps only two pipes to the harness (every
other descriptor, the report channel included, is closed before any solution code runs), lowers
its rlimits to the request's, loads the solution as a module and then answers operations
(``get``, ``call``, ``attr``, ``op``) on it, one frame each way. Results leave by value
(:mod:`tl_wire`; values of the repository's own classes as pickles, :mod:`tl_pickle`, which the
harness decodes with a restricted unpickler); anything else (the solution's own classes,
functions) stays here behind a handle. After a call, the new state of each by-value argument
that changed goes back with the answer (``mut``), so in-place mutation is seen by the tests. A
test's callable arrives as a :class:`tl_cvalues.HarnessProxy`: calling it calls back into the harness.

A PEP 578 audit hook reports, on a third pipe, introspection done *from solution code*
(frames, ``gc`` walks, tracing, patching classes of other modules, reading test-like files):
a further line of defence, never the one the verdict depends on (the verdict is computed in
the harness, out of this process's reach).
"""

import importlib.util
import operator
import os
import resource
import sys
import traceback

import tl_capture
import tl_cops
import tl_cvalues
import tl_guard
import tl_pickle
import tl_wire

MSG = 2000


OPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
       "ge": operator.ge, "add": operator.add, "sub": operator.sub, "mul": operator.mul,
       "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
       "getitem": operator.getitem, "setitem": operator.setitem, "delitem": operator.delitem, "contains": operator.contains, "len": len, "bool": bool, "str": str,
       "repr": repr, "hash": hash, "list": list, "neg": operator.neg, "abs": abs, "int": int, "float": float,
       "iter": lambda o: list(iter(o)), "next": next, "iterh": lambda o: tl_cops.Steps(iter(o)), "step": tl_cops.step,
       "suspect": lambda o: isinstance(o, (int, float, str, bytes, list, tuple, dict, set, frozenset, complex))
       or type(o).__eq__ is not object.__eq__,
       "bind": tl_cops.bind, "isa": lambda o, c: tl_cops.in_mro(type(o), c),
       "subclass": lambda a, b: isinstance(a, type) and tl_cops.in_mro(a, b),
       "defines": lambda o, names: any(getattr(type(o), n, None) not in (None, getattr(object, n, None)) for n in names)}
INTROSPECTION = {"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "gc.get_objects",
                 "gc.get_referrers", "gc.get_referents", "sys.addaudithook"}
FRAME_ATTRS = {"tb_frame", "f_back", "f_globals", "f_locals", "gi_frame", "cr_frame", "ag_frame", "f_code", "f_builtins"}
TESTLIKE = ("test", "check", "conftest")
# stdlib helpers that only pass a solution's request on (glob.glob('/tmp/*'), Path.read_text)
TRANSPARENT = ("inspect.py", "glob.py", "pathlib.py", "fnmatch.py", "os.py", "shutil.py", "genericpath.py", "posixpath.py")
# the runner's modules, each replaced in the candidate's ``sys.modules`` by a :class:`_Tripwire` when it loads
RUNNER_MODULES = ("tl_runner", "tl_harness", "tl_zygote", "tl_wire", "tl_candidate", "tl_remote", "tl_values",
                  "tl_pickle", "tl_cvalues", "tl_guard", "tl_rmodule", "tl_early", "tl_memtests", "tl_rproxy",
                  "tl_cops", "tl_hproxy", "tl_pristine", "tl_capture", "tl_supervisor", "tl_state", "tl_warmup", "__main__")
WARM_DIR = "/tmp/run"   # the warm slot's working folder (tl_supervisor.RUN)
TEMPLATE = []   # (the warm server) the Candidate every forked candidate starts from: prebuild()


class Candidate(tl_cvalues.Values):
    """State of the candidate process: the module, handles, the audit pipe."""

    def __init__(self, rfd, wfd, afd):
        self.reader, self.wfd, self.afd = tl_wire.Reader(rfd), wfd, afd
        self.handles, self.module, self.filename = {}, None, None
        self.trusted = tuple(p for p in {os.path.dirname(os.__file__), os.path.dirname(tl_wire.__file__)} if p) + ("<frozen ",)
        self._in_hook = False
        self.trust = tl_pickle.Trust((), None)
        self.records = tl_cvalues.Records(self)
        self.tripwires = None   # {name: _Tripwire} made ahead (prebuild), else made at load
        self.real, self.std_path = {}, None   # likewise: the warm folder's real path, the standard import path

    def handle(self, obj):
        """Keep ``obj`` here and return its handle id."""
        key = id(obj)
        self.handles[key] = obj
        return key

    # -- audit (further line) -------------------------------------------------------------
    def _from_solution(self, depth=2, transparent=TRANSPARENT):
        frame = sys._getframe(depth)
        while frame is not None:
            name = frame.f_code.co_filename
            if not name.startswith(self.trusted):
                return True
            if not name.endswith(transparent):
                return False
            frame = frame.f_back
        return False

    def audit(self, event, args):
        """PEP 578 hook: report what solution code does to look around (see the module doc)."""
        if self._in_hook or self.module is None:
            return
        self._in_hook = True
        try:
            flag = None
            if event in INTROSPECTION:
                flag = "runner_tampering"
            elif event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRS:
                flag = "runner_tampering"
            elif event == "object.__setattr__" and args and isinstance(args[0], type) \
                    and getattr(args[0], "__module__", None) != self.module.__name__:
                flag = "runner_tampering"
            elif (event == "os.kill" and args and args[0] in tl_guard.GUARDED) or (
                    event == "os.killpg" and args and -args[0] in tl_guard.GUARDED):
                flag = "runner_tampering"   # seccomp kills the caller next (also in its children)
            elif event in ("open", "os.listdir", "os.scandir") and args and _other_process(args[0]):
                flag = "runner_tampering"   # /proc/<the harness>/...: its memory, descriptors
            elif event == "open" and args and isinstance(args[0], str) \
                    and os.path.basename(args[0]).lower().startswith(TESTLIKE):
                flag = "reads_tests"
            elif event in ("os.listdir", "os.scandir") and args and _listing_for_tests(args[0]):
                flag = "reads_tests"
            if flag and self._from_solution():
                os.write(self.afd, ("%s %s\n" % (flag, event)).encode())
        except Exception:  # noqa: BLE001 - the hook must never break the solution
            pass
        finally:
            self._in_hook = False

    # -- operations -----------------------------------------------------------------------
    def load(self, req):
        """Lower the limits, then compile and run the solution as module ``req['module']``."""
        lim, mib = req["limits"], 1 << 20
        nproc = lim["processes"] + req.get("nproc_extra", 0)
        for what, soft, hard in ((resource.RLIMIT_NPROC, nproc, nproc), (resource.RLIMIT_CPU, lim["cpu_s"], lim["cpu_s"] + 1),
                                 (resource.RLIMIT_AS, lim["memory_mb"] * mib, lim["memory_mb"] * mib),
                                 (resource.RLIMIT_FSIZE, lim["file_size_mb"] * mib, lim["file_size_mb"] * mib),
                                 (resource.RLIMIT_NOFILE, lim["open_files"], lim["open_files"])):
            try:
                cur = resource.getrlimit(what)[1]
                resource.setrlimit(what, (soft, hard if cur == resource.RLIM_INFINITY else min(hard, cur)))
            except (ValueError, OSError):
                pass
        os.chdir(req["cwd"])
        self.trust = tl_pickle.Trust([req["cwd"]] + list(req.get("path", [])), req["module"], self.real)
        std = self.std_path if self.std_path is not None else [p for p in sys.path if p.startswith("/usr") or "python" in p]
        sys.path[:] = [req["cwd"]] + std + req.get("path", [])
        sys.modules.update(self.tripwires or {name: _Tripwire(name, self) for name in RUNNER_MODULES})
        mod = type(sys)(req["module"])
        self.filename = os.path.join(req["cwd"], req["target"])
        mod.__file__ = self.filename
        if req["target"].endswith("__init__.py"):
            mod.__path__, mod.__package__ = [os.path.dirname(self.filename)], req["module"]
        else:
            mod.__package__ = req["module"].rpartition(".")[0]
        # a spec and loader as an import gives: pkgutil.get_data(__name__, 'data.bin') and
        # importlib.resources read the package's files through them (text_unidecode)
        mod.__spec__ = importlib.util.spec_from_file_location(req["module"], self.filename,
                                                              submodule_search_locations=getattr(mod, "__path__", None))
        mod.__loader__ = mod.__spec__.loader
        source = req.get("code")
        if source is None:
            with open(self.filename, encoding="utf-8") as fh:
                source = fh.read()
        try:
            code = compile(source, self.filename, "exec")
        except SyntaxError:
            return {"kind": "compile_error", "message": traceback.format_exc(limit=0)[-MSG:]}
        self.module = mod
        out = self._capture(lambda: self._exec(req, mod, code))
        if "err" in out:
            out["kind"] = "runtime_error"
        return out

    def _exec(self, req, mod, code):
        """Run the solution's module in Python's own order: its parent package first (which may
        import it from the same file, as a plain import would), else exec it here."""
        parent = req["module"].rpartition(".")[0]
        if parent and req.get("code") is None:
            __import__(parent)
            got = sys.modules.get(req["module"])
            if got is not None and getattr(got, "__file__", None) == self.filename:
                self.module = got
                return None
        sys.modules[req["module"]] = mod
        exec(code, mod.__dict__)
        return None

    def run(self, req):
        """One operation on the solution; the answer is a value, a handle or an error."""
        op = req["op"]
        if op == "get":
            def fn():
                if req["name"] not in self.module.__dict__:
                    raise AttributeError("the solution does not define %r" % req["name"])
                return self.module.__dict__[req["name"]]
        elif op == "call":
            return self.call(req)
        elif op == "gset":   # a test changed a module-level dict, list or set of the solution's module
            target, args = self.module.__dict__[req["name"]], self.value(req["args"])
            fn = lambda: tl_cops.gset(target, req.get("method"), args)  # noqa: E731
        elif op == "values":   # the module's value classes the harness rebuilds from the task's file
            fn = lambda: self.take_values(req.get("names"))  # noqa: E731
        elif op in ("pickle", "unpickle"):   # pickle.dumps/loads of a handle, done here
            args = self.value(req["args"])
            fn = lambda: self.dumps(*args) if op == "pickle" else self.loads(*args)  # noqa: E731
        elif op == "attr":
            target = self.handles[req["h"]]
            fn = lambda: getattr(target, req["name"])  # noqa: E731
        elif op == "setattr":
            target, val = self.handles[req["h"]], self.value(req["value"])
            fn = lambda: setattr(target, req["name"], val)  # noqa: E731
        else:
            args = self.value(req["args"])
            fn = lambda: tl_cops.eq(self, tl_cvalues.HARNESS_TYPES, *args) if op == "eq" else OPS[op](*args)  # noqa: E731
        return self._capture(fn)

    def call(self, req):
        """Call a handle; the answer carries ``mut``: [[arg index or name, new state]] for each
        by-value argument the call changed."""
        target = self.handles[req["h"]]
        args = self.value(req["args"])
        kwargs = dict(self.value(req["kwargs"]))
        watch = [(i, a) for i, a in enumerate(args) if self.mutable(a)] + \
            [(k, v) for k, v in kwargs.items() if self.mutable(v)]
        before = [self.encode(a) for _, a in watch]
        answer = self._capture(lambda: target(*args, **kwargs))
        muts = []
        for (key, arg), old in zip(watch, before):
            new = self.encode(arg)
            if new != old:
                muts.append([key, new])
        if muts:
            answer["mut"] = muts
        return answer

    _capture = tl_capture.capture   # one operation, its output teed and warnings recorded

    def serve(self, req_load):
        """Load, then answer operations until the harness closes the pipe. A load request naming
        ``get`` (script mode: the entry point) brings that ``get``'s answer too (``got``): one round
        trip fewer per request (issue 14; :meth:`tl_remote.Remote.get` uses it only while nothing
        else was asked)."""
        answer = self.load(req_load)
        if req_load.get("get") and "err" not in answer and "message" not in answer:
            answer["got"] = self.answer({"op": "get", "name": req_load["get"]})
        tl_wire.send(self.wfd, answer)
        while True:
            try:
                req = self.reader.recv()
            except (EOFError, tl_wire.WireError):
                os._exit(0)
            tl_wire.send(self.wfd, self.answer(req))

    def answer(self, req):
        """The answer frame of one request (a protocol failure is a RuntimeError answer)."""
        try:
            if type(req.get("clock")) is list:
                return tl_cops.frozen(req["clock"], lambda: self.run(req))
            return self.run(req)
        except BaseException as exc:  # noqa: BLE001 - a bad handle, a broken value
            return {"err": {"type": "RuntimeError", "builtin": True, "msg": "protocol: %s" % tl_capture.safe_str(exc), "tb": ""}}


class _Tripwire(type(sys)):
    """Stands in for the runner's modules: touching one from solution code is reported."""

    def __init__(self, name, owner):
        super().__init__(name)
        object.__setattr__(self, "_tl_owner", owner)

    def __getattr__(self, name):
        owner = object.__getattribute__(self, "_tl_owner")
        if not name.startswith("__"):
            os.write(owner.afd, ("runner_tampering sys.modules[%r].%s\n" % (self.__name__, name)).encode())
        raise AttributeError(name)


def _other_process(path):
    """True for a ``/proc/<pid>/...`` path of another process (``/proc/self`` is allowed)."""
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    if not isinstance(path, str) or not path.startswith("/proc/"):
        return False
    pid = path[6:].split("/", 1)[0]
    return pid.isdigit() and int(pid) != os.getpid()


def _listing_for_tests(path):
    """True when listing the working folder or a temporary folder (where tests once were)."""
    if path in (".", "", None, b".", b""):
        return True
    path = os.path.normpath(os.fsdecode(path)) if isinstance(path, (str, bytes)) else ""
    return path in (os.getcwd(), "/tmp", os.path.normpath(os.environ.get("TMPDIR") or "/tmp"))


def prebuild():
    """(The warm server, once, after its warm-up; it never sees a task.) Make the :class:`Candidate`
    and its tripwires that every candidate forked afterwards takes as its own copy (:func:`start`),
    so none builds them: 0.3-0.5 ms and ~135 copied pages per candidate (issue 14, a fork micro-
    benchmark at load 10). Holds no descriptor (-1 until :func:`start` sets the candidate's)."""
    cand = Candidate(-1, -1, -1)
    cand.tripwires = {name: _Tripwire(name, cand) for name in RUNNER_MODULES}
    cand.real = {WARM_DIR: os.path.realpath(WARM_DIR)}   # a folder the slot's reset remakes, never a link
    cand.std_path = [p for p in sys.path if p.startswith("/usr") or "python" in p]   # as this server's, inherited
    TEMPLATE[:] = [cand]
    return cand


def start(rfd, wfd, afd, out_fd=None):
    """Entry point in the freshly forked child: drop every other descriptor, wait for the
    ``load`` request, then serve. Never returns."""
    try:
        keep = sorted({rfd, wfd, afd} | ({out_fd} if out_fd is not None else set()))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        low = 3
        for fd in keep:
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 65536)
        tl_guard.protect()   # before any solution code: the harness cannot be signalled from here
        if TEMPLATE:   # the warm server's, made before any fork (prebuild): this process's own copy
            cand = TEMPLATE.pop()
            cand.reader.fd, cand.wfd, cand.afd = rfd, wfd, afd
        else:
            cand = Candidate(rfd, wfd, afd)
        req = cand.reader.recv()
        sys.addaudithook(cand.audit)
        cand.serve(req)
    except BaseException:  # noqa: BLE001 - the harness sees the pipe close and reports it
        try:
            os.write(2, ("tuneloop candidate process failed: %s\n" % tl_capture.safe_tb()[-MSG:]).encode())
        except BaseException:  # noqa: BLE001
            pass
    os._exit(0)
