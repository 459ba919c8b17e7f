"""Run untrusted, model-written code against tests: :func:`make_sandbox` is the entry point.

This package only re-exports; the modules: :mod:`~sdk.sandbox.contract` (request, result,
limits), :mod:`~sdk.sandbox.config` (the ``sandbox:`` section), :mod:`~sdk.sandbox.factory`
(:func:`make_sandbox`), :mod:`~sdk.sandbox.local` (backend choice), :mod:`~sdk.sandbox.backend`
(the :class:`Backend` protocol), :mod:`~sdk.sandbox.pool` (slots, cache, dispatch), the backends
:mod:`~sdk.sandbox.bwrap`, :mod:`~sdk.sandbox.process` and :mod:`~sdk.sandbox.ray_backend`.

    sandbox = make_sandbox(SandboxConfig(...))            # backend auto = bubblewrap here
    results = sandbox.run([ExecRequest(...), ...])        # aligned with the requests
    toolchain_status(Language.GO)                          # None, or why Go cannot run

What is isolated, by the default **bubblewrap** backend (:mod:`sdk.sandbox.bwrap`), and proven
by ``tests/sandbox/test_hostile.py``:

- never the caller's process; never root: each concurrent slot runs as its own leased,
  unprivileged uid (:mod:`sdk.sandbox.uids`), inside new user, pid, net, ipc, uts and cgroup
  namespaces, with no capabilities and nested user namespaces disabled;
- file system: read-only ``/usr`` and a few harmless ``/etc`` files; the task's files
  read-only at ``/work``; ``/tmp`` a tmpfs of ``scratch_mb``; ``/dev/shm`` 16 MiB; ``/dev``
  read-only; ``/proc`` of the sandbox only. The host's ``/root``, ``/home``, ``/work``,
  ``/etc/shadow``, the caller's folder and environment are not visible;
- network: an empty network namespace, and seccomp denies every socket family but
  ``AF_UNIX``; seccomp also denies ptrace, process_vm_*, mount, unshare/setns, keyctl, bpf,
  io_uring, perf events and module loading;
- rlimits: CPU seconds, address space (``memory_mb``), file size, open files, processes (per
  slot uid); wall-clock timeout; on exit or timeout the process group and every process of
  the slot uid are killed (reaches ``setsid()`` grandchildren and fork bombs);
- output capped (``output_bytes``) and flagged truncated; a flood is killed (OUTPUT_LIMIT);
- the verdict is out of the solution's reach (issue 14; Python ``pytest`` and ``script``, both
  backends, cold and warm): the solution runs only in a *candidate* process forked before the
  trusted *harness* read the request; the tests run in the harness against proxies, every call
  crosses the process boundary with plain data (exact builtin types) or values of trusted
  classes (the repository's modules, never the solution's; a short standard list), which the
  harness rebuilds only with a restricted unpickler (never ``os.system``, ``eval``, the solution's
  classes; it changes only objects the pickle made: no ``BUILD`` on a trusted class, an enum member or a
  test's object, since the candidate can write its own frames); anything else stays behind a handle, and a handle never equals plain data; changes
  to by-value arguments are copied back after each call, a test's callables are called back in
  the harness (``sdk/sandbox/_runner/tl_values.py``); every assertion is evaluated in the
  harness, and results go to a channel the candidate never holds (closed before any solution
  code runs; the harness is non-dumpable, seccomp denies ptrace). Tests never touch the working
  folder: they travel on the harness's stdin, pytest collects them from a private folder of
  placeholders (served from memory). The harness never imports a file the candidate wrote: the cold
  working folder is read-only; the warm harness keeps ``/tmp/run`` (and its ``src/``) off its
  ``sys.path`` (a planted ``fractions.py`` once ran there); a guard first on its ``sys.meta_path``
  refuses, flagged ``runner_tampering``, any module under the candidate's temporary folders (the
  tests folder among them, which pytest puts on ``sys.path``: only the files held in memory) and the
  solution's file under any name but its own (``import solution`` in a script test gets the proxies);
  pytest's options come from the request's ``pytest.ini`` in memory, never the folder's copy
  (tests/rewards/test_redteam_import_path.py). Exactly the tests the harness ran
  are reported, one result each; a call that does not return by the deadline fails its test
  (status ``timeout``) and the candidate is killed. An exit code, stdout, ``sys.exit(0)``/``os._exit(0)`` can never pass;
- tampering the harness sees is reported in ``ExecResult.flags`` (``always_equal``: a non-plain
  value with its own ``__eq__`` compared, or with its own ``__sub__``/``__lt__``... used on plain data; ``exit_trick``: SystemExit/exit 0 during a call;
  ``runner_tampering``: the harness killed/stopped, introspection from solution code,
  ``/proc/<another pid>`` opened or listed; ``reads_tests``: test-like file names, listing the
  working or a temporary folder; ``always_equal`` also for a builtin subclass of the solution's
  whose own ``__eq__``/``__sub__``... answers for a fresh ``object()``). The candidate's PEP 578
  audit hook (frames, ``gc``, tracing, patching other modules' classes, files) is a further line only: it runs in the solution's
  process and can be silenced by it, and the verdict never depends on it;
- warm slots forget (:mod:`sdk.sandbox.warm`): the server never reads a request, a test or an
  answer (it forks a fresh candidate per request, beside a long-lived supervisor that runs the
  tests and never forks, so no candidate ever held an earlier request in memory; the supervisor is
  replaced after any request that changed it: ``_runner/tl_state.py``), ``/tmp`` and ``/dev/shm``
  are (host running as root) remade as new tmpfs mounts, checked to hold only ``/tmp/run``
  (without the root helper: emptied and checked empty after every request), with the slot's pid
  counter set back, by a root helper on the host in the slot's mount namespace while the server waits (:mod:`sdk.sandbox.slotreset`: new roots, inode numbers that do
  not count the last task's files, pids that do not count its forks; a slot that is not clean, whose
  reset failed, or whose server broke, is replaced before its next task: the caller has its result at
  the harness's answer, the clean-up's report is read before the slot serves again, ``warm.Zygote.settle``;
  a slot that cannot start is ``sandbox_error``, never the task's failure),
  System V IPC and POSIX message queues are denied by seccomp (nothing outlives a request, and
  no shared memory escapes ``memory_mb``; extended attributes cannot be set, round 6; another
  process's nice value, CPU mask, scheduling policy or I/O priority cannot be set, round 8: the warm
  server's were inherited by the next task's candidates); no process the task can inspect holds a
  host pipe (bwrap's init, pid 1 in the slot, dumpable, the task's uid, has /dev/null as its stdio:
  warm and cold runs pass their pipes beside it, moved onto 0-2 inside the slot, round 7), and the
  slot's root is read-only (``--remount-ro /``, round 7); that init's memory and writable knobs
  (``/proc/1/mem``, ``oom_score_adj``, ``coredump_filter``, ``autogroup``, ``clear_refs``, ``sched``) are covered by
  a read-only ``/dev/null`` (``bwrap.INIT_MASKED``) and its knobs checked by the host after each request
  (``warm._init_marks``: a change replaces the slot; round 10, ``tests/sandbox/test_hostile_round10.py``: one
  task's marks there were read by the next warm task). Round 11 (``tests/sandbox/test_hostile_round11.py``, warm and
  cold, all held as found): other processes' peak memory after a 120 MiB answer, ``RLIMIT_NOFILE`` of every other
  pid (``prlimit``: the guard kills the writer), a core file of a crash, ``/tmp`` and ``/dev/shm`` filled under a
  mode-000 folder, the slot's cgroup counters and path, a mark in every process's environment.

What is NOT isolated or not covered:

- change tasks (``pytest_repo``): the repository's tests run in the candidate's process
  (``_runner/tl_repo.py``); the verdict is re-derived from the nonce-tagged evidence of an audit
  hook (``_runner/tl_witness.py``) with run-time layers (``_runner/tl_rguard.py``, ``tl_rhide.py``: pytest's
  objects and a signal handler's frame withheld, ``tl_rmods.py``: the test modules guarded) and shadow
  comparisons of the test files (``_runner/tl_shadow.py``, ``ExecRequest.shadow_exempt``), not a
  process boundary: what they leave open is said once, in :mod:`sdk.rewards`;

- the warm supervisor serves many requests of its slot (issue 14's throughput): what a *test*
  changes in it carries over unless the fingerprint checked after each request sees it (modules,
  every module and class namespace, ``os.environ``, ``sys.path``, signal dispositions, limits,
  threads, descriptors, audited ``ctypes``/``putenv``/process starts/function patches; see
  ``_runner/tl_state.py``; an attribute set on an instance a module holds, ``sys.stdout.x = 1``, is
  seen: the supervisor is then replaced, also after an honest test's ``random.gauss``);
  the contents of a module-level container, an instance reached only through another object, or a
  slot attribute are not seen. Tests are the task's, not the model's: the solution reaches the
  supervisor only as values on a pipe;

- a warm slot's pid namespace lives across its requests (the server forks each candidate; seccomp and
  the absent capabilities keep it from making a namespace per request): only its counter is set back
  to the last candidate's pid when a request forked (``ns_last_pid``), so a candidate's pid still counts
  the slot's earlier requests and supervisor replacements (never what they forked); without root on
  the host there is no helper, and ``/tmp`` and
  ``/dev/shm`` are only emptied (their inode counters and the pid counter then carry over);
- memory is bounded by address space (RLIMIT_AS), not by a cgroup: resident memory of a
  process that maps but does not touch memory is not limited separately, and tmpfs pages
  (``/tmp``, ``/dev/shm``) and memfd pages count against the host, bounded by their sizes and
  ``file_size_mb`` x ``open_files`` (a warm slot's cgroup bounds all of it, where writable);
- CPU *time* is limited per process (RLIMIT_CPU); a process tree can use up to ``processes``
  times that before the wall-clock timeout ends it; there is no CPU share (cgroup) limit;
- the kernel is shared (a kernel exploit escapes any namespace sandbox); harness and candidate
  share one uid inside the namespace: the candidate cannot read or write the harness, and
  signalling it (``kill``/``tgkill``/``SIGSTOP``, ``prlimit``, ``pidfd_open`` aimed at an
  ancestor, their process group, ``0`` or ``-1``) kills the candidate with SIGSYS
  (``_runner/tl_guard.py``, a seccomp filter installed before any solution code; flagged
  ``runner_tampering``); the same guard runs in each C/C++ test child (``tl_test.h``, installed
  before the program's constructors, which run only there). On architectures other than
  x86_64/aarch64 the guard has no syscall table and no sandbox is built (``SandboxError``);
- what crossing the boundary changes for honest code: arguments are copies whose changes are
  copied back onto the top-level argument after the call (its elements are fresh objects: an
  element the test kept a reference to is not updated); standard-library iterators, generators
  and ``itertools`` objects cross by reference both ways and are stepped one element per call
  (their position is shared, infinite and ``groupby`` iterators work, but a call-dense test is
  far slower than in one process: validation gives a reference that only timed out one try with
  4x its limit); a test's callable or own object works through calls back (call, iteration,
  ``len``, ``repr``, ``bool``, items, ``in``, ``__name__``, its signature, and *public* attributes
  of a test's or the repository's own instances, never of a module, class, function or
  standard-library object; a test's ``Mapping`` is a ``Mapping`` there); a repository class is rebuilt by value only when its module was imported by
  the tests or by the solution's file and it pickles through classes (a ``__reduce__`` naming a
  function keeps it behind a handle); a function, class or module of another repository module comes back
  as the harness's own object of that name, and the same candidate object always as the same proxy
  (``f(x) is x``, sentinels keep their identity); a remote object compared with plain data is unequal
  (a test's own object with ``__eq__`` decides, as in one process); ``isinstance``/``issubclass``
  against the solution's classes follow the real MRO; its exception classes are mirrored as real
  classes (``pytest.raises(mod.Error)`` works: ``_runner/tl_rmodule.py``); ``__name__``, ``__doc__``,
  ``__module__`` of its objects are read there; a handle kept as a class attribute binds through
  the candidate's ``__get__``; ``pickle.dumps`` of a handle pickles it in the candidate; a clock
  frozen by the test (freezegun) is frozen for the call too; the tests' sources are served to pytest
  from memory (``_runner/tl_memtests.py``: the files on disk are placeholders), so the solution is
  loaded before collection and a test module may call it at import. The solution module's own value
  classes (namedtuples, ``str``/``int``/``tuple`` subclasses, dataclasses, enums) that the solution
  left unchanged, whose comparison methods reach no function the solution changed (else its helper
would decide ``==`` here) and that are not the entry point's come back as the *task's* classes, built in the
  harness from the task's original file (from the request, never the solution's; their module's other
  functions and classes are never defined there, their names are the solution's, so nothing captures the
  task's code, and a class with such a base is not kept: ``_runner/tl_pristine.py``); a test's own namedtuple,
  dataclass or attrs instance reaches the solution as a record with its fields (other attributes
  called back; changes to its fields are not copied back); a test's class (plain metaclass, no
  slots or properties) crosses by its namespace, so the solution can decorate it (``@attr.s``), its
  functions called back as methods; a warning the solution raises is raised in the harness inside
  the call (category: a mirrored, repository or builtin class; the message as text). What does not work: a test
  class that subclasses the solution's class, ``monkeypatch`` of the solution module, state of
  another repository module (it exists once per process: a registry the test fills is not the
  candidate's), a test's function pickled by the candidate (nor is one ordered against or
  computed with plain data: ``<``, ``-``... raise TypeError; a builtin subclass, ``namedtuple`` or
  ``IntEnum`` member of a class the solution defined or changed arrives as its base value) (``from solution import *`` gives
  the names read from its source); a function of another repository module handed to the
  candidate (a decorator's ``func``) is a stand-in that is called back, but shows its code object
  (``__code__``, marshalled: validators' ``_func_args_as_dict``), never one of a test file, a conftest
  or a module served from memory, and other introspection of it (``__globals__``, ``__defaults__``,
  ``inspect.getsource``) still fails; an instance of the solution's exception class that it returns
  is an instance of the tests' mirrored class (``tests/connectors/test_crossing_holes.py``); after a
  timed-out call the remaining tests of the run fail too (the candidate is gone);
- compiled and other languages (:mod:`sdk.sandbox.languages`) have their own runners (C/C++,
  Java, JS: see there; a JS test runs in the solution's process, and a CommonJS or ES module test's pass counts only
  where that process signed it (a test the test file or a helper script shipped with the suite registers),
  ``languages/nodesign.py``; TypeScript tests are unsigned);
  equality-operator tricks there are the rewards module's concern.

The **process** backend (opt-in: ``allow_unisolated: true``; :mod:`sdk.sandbox.process`)
keeps the separate process, uid drop (when root), cleared environment, own folder, rlimits,
process-group + uid kill, output cap and nonce verdicts, but has no namespaces: network
works, world-readable files are readable, ``/tmp`` is shared, other processes are visible.
Without root there is no uid drop at all (tests are only chmod-ed read-only).

Python interpreter: see :mod:`sdk.sandbox.pyruntime` (bare ``-I -S -B`` interpreter plus a
read-only copy of pytest; the system python3 when the caller's is unreachable by the uid).
Other languages: :mod:`sdk.sandbox.languages`.
"""

from sdk.sandbox.backend import Backend
from sdk.sandbox.config import RaySandboxConfig, SandboxConfig
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox, TestOutcome
from sdk.sandbox.factory import make_sandbox
from sdk.sandbox.languages import toolchain_status
from sdk.sandbox.local import UNISOLATED_WARNING
from sdk.sandbox.pool import LocalSandbox
from sdk.sandbox.timing import calibrate, derive_limits

__all__ = ["Backend", "ExecRequest", "ExecResult", "ExecStatus", "Limits", "LocalSandbox", "RaySandboxConfig",
           "Sandbox", "SandboxConfig", "TestOutcome", "UNISOLATED_WARNING", "calibrate", "derive_limits",
           "make_sandbox", "toolchain_status"]
