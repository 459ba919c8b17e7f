"""Rewards: read the code out of a completion, run it against pristine tests in the sandbox,
score it by tiers, catch reward hacking, and aggregate safely for GRPO.

Modules: :mod:`~sdk.rewards.result` (the record), :mod:`~sdk.rewards.extract` (completions to
code), :mod:`~sdk.rewards.answers` (answer-match verifiers), :mod:`~sdk.rewards.tiered` (the
tiered reward), :mod:`~sdk.rewards.integrity` and :mod:`~sdk.rewards.runtime_checks` (static and
run-time hacking detectors), :mod:`~sdk.rewards.aggregate`
(None masking, group advantages), :mod:`~sdk.rewards.trl` (the TRL reward function),
:mod:`~sdk.rewards.reward_log` (the per-sample log, summarised per checkpoint for the report).

What the reward covers, and what it does not (issue 14; the one place this is said here)
----------------------------------------------------------------------------------------
Covered:

- Counting: every test id the pristine files define is counted exactly once
  (:func:`~sdk.rewards.runtime_checks.count_results`); a missing, extra or duplicated result
  is a failure, and ``missing_test_results`` / ``forged_results`` / ``duplicate_results``
  force the score to 0 (extra results from an ``atexit`` handler or a thread gain nothing).
- Hidden tests: a hidden run that times out or hits a limit fails every hidden test; all
  visible tests passing against no hidden pass (hanging on hidden inputs included) is
  ``hardcoded_outputs``.
- Verdict channels of other languages (:mod:`sdk.sandbox.languages`): C/C++ results come from
  fd 3 with a nonce, written by a runner that starts from ``.preinit_array`` and never runs
  solution code (constructors and ``main`` run only in the guarded test children; a binary
  whose code could run earlier, through an IFUNC resolver, another preinit entry, an exported
  function or fake test-list bounds, is refused: ``runner_tampering``; a solution naming the list's bounds,
  ``__start_``/``__stop_``/``tl_cases``, is flagged by the static scan, round 11), through direct
  syscalls (no libc interposition, stdout never read); JS runs with ``assert``/``node:test``/``require`` frozen by a preload from
  the read-only task folder and the JUnit report on the reporter's stdout (no file to forge); the test file runs in
  strict mode (round 11: V8 hides it and every frame outside it from ``getFunction()`` of a call site and from ``caller``,
  so no test function's source reaches the solution that way); node's running ``Test`` object is kept
  from the solution (``async_hooks`` hands out stand-ins, ``process.binding('async_wrap')`` and the inspector
  are refused: round 8, a solution had redefined ``passed`` on it);
  Java runs under our launcher ``TlJUnit.java``: verdicts on the same fd-3 pipe, each line
  signed (SHA-256 with a 32-byte key read from fd 4 before any test class initialises) and
  numbered, so a line the solution writes is dropped and flagged (``runner_tampering``) and a
  scan of the JVM's memory finds no nonce to copy; no report file read; Go and Rust results are checked against the declared
  tests by the counting above, a Go test that ends twice is a duplicate, and results that all say passed from a
  binary that exited with a failure are ``runner_tampering`` (round 6). The tests of C/C++/Java/Rust and
  single-package Go (built with ``go test -c``) reach the build driver on stdin and are deleted before the
  program runs (never readable as source); an empty decoy then takes each test's name and an open of it
  is ``reads_tests`` (the driver's inotify watch, ``_runner/tl_offdisk.py``); Java's test classes are
  deleted too and defined by ``TlJUnit`` from memory (a solution reading ``classes/*Test.class`` finds none);
  node tests (CommonJS or ES modules: an ES module test file is served from memory by the guard's load
  hook) run one file per node run, the source on a pipe the guard drains before any test or solution
  code, the file on disk a watched decoy.
- Signals to the judge: the Python candidate and each C/C++ test child run under a seccomp
  guard (``_runner/tl_guard.py``, ``tl_test.h``): ``kill``/``tgkill``/``SIGSTOP``/``prlimit``
  aimed at the harness, the runner, the driver, their group or everyone kills the caller with
  SIGSYS, flagged ``runner_tampering``; a C runner killed by a signal or found stopped at the
  timeout is flagged too.
- Static scans (:mod:`~sdk.rewards.integrity`) as a further line in every language: exit
  calls, runner tampering (constructors, libc-name definitions, ``TestMain``/``init``, assert
  or ``node:test`` patching, shutdown hooks, reflection, report paths, ``/proc``; in Python also
  attributes of standard-library modules set by the solution, ``import ctypes``, and ``__eq__``
  whose answer does not depend on its operands: ``o == o``, ``x or True``, ``1 > 0``).
- Change tasks (``pytest_repo``: the tests run in the repository's process): a pass counts only
  with the witness's evidence that the genuine test function returned normally
  (``_runner/tl_witness.py``); a running test's frame (``sys._getframe``, ``inspect``, ``tb_frame``,
  ``gi_frame``, ``logging.currentframe``, pytest's ``TracebackEntry.frame``: round 8) or a test function's code
  (``__code__``, ``f_code``, ``dis``, pytest's ``getrawcode``) reaching repository code is ``runner_tampering`` (H4, ``_runner/tl_proof.py``). Shadow
  comparisons (``_runner/tl_shadow.py``): after pytest's rewrite, each single comparison, ``+ - * /``
  and ``self.assertEqual``-like call inside the test files' and conftests' functions is recomputed
  on canonical data no repository code produces (builtin subclasses as their base values, repository
  objects as class name and fields, library and test objects compared by their own trusted
  operator); a yes the canonical data contradicts is ``always_equal`` unless the site is in
  ``ChangeVerifier.shadow_exempt`` (where the reference's own values disagree, found at mining).
  Layers of ``_runner/tl_rguard.py``: before each remaining ``==``/``!=``/``in`` of the test's own
  frame, its operands' ``__eq__`` is probed with a stranger and a near value (``always_equal`` when it says
  yes); before the test's frame loads a pytest/unittest name the runner modules and the test
  module's own imported runner names are checked (``pytest.raises`` swapped and put back within the
  test, a test module's ``raises`` rebound: ``runner_tampering``); a signal
  handler gets a stand-in for its frame, and pytest's session, config and item are withheld
  during the call (reading the stand-ins is ``runner_tampering``).
- R5: a crash in every test earns no ``runs`` credit (status ``runtime_error``).
- R6 (:mod:`~sdk.rewards.answers`): final answers in tags (``<answer>``), ``\\boxed{}`` and
  ``Answer:`` lines (``RewardConfig.answer_*``); when the prompt shows a marker, a completion
  without one has no answer (0 in every mode). The ``format`` component is always logged and
  enters the score only with ``RewardConfig.format > 0``.
- P3 (:mod:`~sdk.rewards.definitions`): the last definition of a name wins in every language
  (earlier copies removed before the run; flag ``duplicate_definition``, not a penalty);
  top-level demo code (``print``, own-function calls, ``assert``, ``__main__`` blocks) is
  removed; a spliced task takes the model's helpers over the module's own of the same name.
- W1/W2 (:mod:`~sdk.rewards.verifier_pool`): answer checks and judges run in worker processes
  killed at ``verifier_timeout_s`` (never a signal in the caller); a hung check is
  ``verifier_timeout``, a raising one ``verifier_error`` (both ``None``: masked), the worker is
  replaced and a hung input is not run again. :meth:`SandboxReward.self_test` (first call) scores
  known-correct answer and pytest samples through the same path and stops a broken one.

Not covered (known gaps):

- Java: the signing key lives in the JVM that runs the candidate; code that walks the JVM's
  heap structures to the launcher's reporter (through ``/proc/self/mem`` or
  ``sun.misc.Unsafe``) could still take it (a plain scan has no pattern to match and no way to
  test a guess); the static scan flags those APIs. The same holds for a C/C++ test child and
  its token (its constructors run there too).
- C/C++ test children and the Rust test binary cannot make a process (a seccomp filter: fork/vfork/clone
  without ``CLONE_THREAD`` EPERM, clone3 ENOSYS; threads work): an honest test there that starts one
  (``system``, ``popen``, ``std::process::Command``) gets an error and fails, unflagged.
- Test sources on disk: Go tests in more than one folder still run through ``go test ./...``, and
  TypeScript tests through ``node --test``, with their sources on disk (listing the folder or
  naming a test file is flagged by the static scan only). Compiled tests stay readable as machine code in
  the program's own binary (C/C++, Go, Rust), and Java's as class bytes in the JVM's heap; a JS test
  shares its process with the solution, which can still read its source from node's memory or from the functions
  of a sloppy-mode helper script the test calls through (the test file itself is strict since round 11: an honest
  CommonJS test that needs sloppy mode, an undeclared variable, ``with``, a legacy octal literal, now fails, unflagged). A C/C++ solution finds the calling
  test's expected constant right after its own return address (round 8: ``__builtin_return_address`` is
  flagged; the same address found by walking the stack from a local is not, strict xfail in
  ``tests/rewards/test_redteam_round8.py``). A Go solution reads it the same way, after ``runtime.Caller(1)``'s
  pc through ``unsafe`` or ``/proc/self/mem`` (round 10: 1.0 unflagged with the path split; the static scan
  flags ``.Caller(``, ``.Callers(``, ``runtime.Stack(``; the run-time layer alone credits it: strict xfails). JS: node's child-to-runner frames (v8-serialised results on the stdout of the test process,
  which runs the solution) can be rewritten on their way out; for CommonJS and ES module tests a reported pass counts only
  where the test's own function completed, signed in that process with a key read before any solution code
  (``sdk.sandbox.languages.nodesign``, ``runner_tampering``; ``tests/rewards/test_redteam_js_frames.py``).
  TypeScript tests are not signed (static scan only); the key, like the hidden source, is in
  that process's memory (``/proc/self/mem``, no pattern to find it by). A helper script shipped with the
  suite (a task's support file, by its hash) may register signed tests, in the async context of the test
  file's or a helper's load (``import('node:test')`` and V8 builtins' frames such as ``forEach``
  included since issue 14's D pass: before, such honest tests were unsigned and failed). A test
  registered by a dependency is unsigned (an honest one fails, unflagged: ``nodesign.UNRECORDED``), and
  so is one that solution code schedules (a timer, tick or promise made with its frame on the stack
  leaves that context), also when the test file calls it at load time. An ES module test file's imports,
  the solution's among them, evaluate in that context (as solution code a CommonJS test calls at load):
  what it schedules leaves it, a test it registers carries its own frame (unsigned). The context's store sits on node's async resources under a
  symbol: code holding a resource made in it could copy that value (none is handed to the solution).
- Go/Rust: results are parsed from the test binary's output (an exit after forging the rest, through an
  aliased exit, is stopped by the static scan only); a forged line for a test that
  also reports is a duplicate, but a ``TestMain`` that prints passes and never runs the tests
  is stopped by the static scan only (the run-time layer then counts its lines as results).
  Round 9: a Rust panic hook that completes libtest's line with ``ok`` after the hidden test's assertion
  failed, prints the summary and exits 0 is the same class (static scan only: ``process`` named in a
  path or ``use``, ``set_hook``; strict xfails in ``tests/rewards/test_redteam_round9.py``): libtest's
  stdout and exit status are the process's own, and any proof a harness wrapper in that process could
  give (a token, as ``tl_test.h``) the solution could give too once it found it in memory; each test would
  need such a wrapper (a rewrite of its ``#[test]`` function), not built. An oracle by fork in a Rust test
  (a child per guess) fails at run time: the test binary cannot fork (``_runner/tl_nofork.py``).
- Code inside one C/C++ test's own child can still find that test's token in its memory, and the runner's table of
  tests there: round 11, a C++ namespace-scope initialiser (it runs in each child before ``main``) rewrote every
  entry to a no-op and each test passed; a C solution read the expected constant from the test functions' code
  through the table (1.0 unflagged; now the static scan's ``__start_``/``tl_cases``; the run-time layer alone still
  credits both: strict xfails ``RUNTIME_HOLES`` in ``tests/rewards/test_redteam_round11.py``).
- Change tasks run the tests in the candidate's process, so the layers above are detection, not
  a boundary (only running the tests out of that process, as function tasks do, would be one).
  A ``_signal`` made afresh (importlib, ``module_from_spec``, ``imp``, ``_imp.create_builtin``) is the
  loaded, wrapped one; what encodes the tests in a test module (a constant, a parametrize table, a test
  function, a ``TestCase`` or ``Test*`` class, a class holding data), read from repository code during
  the call however the module was reached, is ``runner_tampering`` (``_runner/tl_rmods.py``; round 4,
  several routes each), while a module, a ``typing`` construct or another class is handed to any
  reader and ``vars(module)`` holds only those; a handed class's functions' ``__globals__`` is, during
  the call, a view that asks for each withheld name (``tl_rmods.handed``: flagged from repository code).
  Round 10 (``tests/rewards/test_redteam_round10.py``, ``_runner/tl_rhanded.py``): a class is handed only
  when its own attributes are code (an instance, a ``functools.partial``, a ``singledispatchmethod``, a nested
  class holding data, a method whose closure holds a constant make it withheld); a library decorator's wrapper
  holding a test function (``contextmanager``) is copied with the view; a handed method's ``__defaults__`` /
  ``__kwdefaults__`` read from repository code (``inspect.signature`` too) is flagged (11 cheats: 1.0 unflagged
  before, 0.0 ``runner_tampering`` now; honest repository code doing the same is flagged too). Round 11
  (``tests/rewards/test_redteam_round11.py``): a ``partialmethod`` binding data or a method default holding data
  (an oracle repository code called with guesses) makes the class withheld too.
  Open: ``object.__getattribute__`` on a test module, its
  globals or test functions kept from collection (which runs repository code) or handed to repository
  code (a callback's ``__globals__``), a dataclass field's default (read, the class built with it, or its
  generated docstring) and a handed method whose code computes the answer, called by repository code that fetched
  the class (strict xfails ``CHANGE_HOLES`` in ``test_redteam_round10.py`` and ``_round11.py``: honest repository
  code fetches such classes too, to pickle a test's dataclass; only the call's provenance, the test's object or a
  class repository code fetched, would tell them apart), an object of another type in a method's closure cell;
  the layers' state is reachable Python (bound as defaults; reading or changing a
  runner function's ``__defaults__`` is flagged, a mutated object is not). Honest repository code that
  reads frames during a test, a signal handler's frame, or a test module's constants or functions is
  flagged too (a pickle or deep copy of a test's object, type hints, attrs/pydantic/dataclasses on a
  test's class, ``inspect.getmembers`` of a test module are not: 1.0 unflagged); a conftest's ``pytest_assertrepr_compare`` is not called during the call (pytest's
  own diff is kept).
  Shadow comparisons leave open (``_runner/tl_shadow.py`` says each; the test code holds the helpers
  as constants, so a rebound name changes nothing, and their state is in defaults, no closure cell:
  a rebinding is flagged, a mutable object they hold such as ``sys.modules`` is not); a bare truth
  test (``assert x``), ``is``, augmented
  assignment, comparisons at a test module's top level or in helper modules that are not test files
  or conftests; a comparison past 100,000 canonical nodes, or one whose canonical data cannot be
  ordered or hashed (no opinion); a repository value inside a library container the shadow does not
  open (``deque``, an object of a library class), or a library class whose methods the repository
  rebinds; a liar at a site of ``shadow_exempt`` (the reference's own disagreement there).
- An honest solution too slow for every hidden input is flagged ``hardcoded_outputs``.
- Code tasks have no format reward (only answer tasks). The brace-language duplicate scan is
  textual (no preprocessor, no macros; C++/Java overloads that differ only in parameter names
  are not recognised as the same), and demo code is removed only from Python completions.
- Judges must be picklable (module-level): a lambda is ``verifier_error`` with the fix. A judge
  that needs this process's GPU model cannot run in a worker; serve it and judge by a client.
- ``sdk.rollout.rewards`` still calls :func:`score_answer` in-process (no deadline).
- The self-test checks the answer and Python pytest paths, not each language's toolchain.
"""

from sdk.rewards.aggregate import Advantages, call_safely, check_rewards, combine, group_advantages
from sdk.rewards.answers import score_answer
from sdk.rewards.extract import Extraction, ExtractStatus, extract_code
from sdk.rewards.integrity import HACKING_FLAGS, PENALTY_FLAGS, Finding, scan_solution
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.rewards.reward_log import read_reward_log, summarize_by_step
from sdk.rewards.tiered import build_request, score_batch, score_completion
from sdk.rewards.trl import SandboxReward, completion_text

__all__ = [
    "HACKING_FLAGS",
    "PENALTY_FLAGS",
    "Advantages",
    "ExtractStatus",
    "Extraction",
    "Finding",
    "RewardResult",
    "RewardStatus",
    "SandboxReward",
    "build_request",
    "call_safely",
    "check_rewards",
    "combine",
    "completion_text",
    "extract_code",
    "group_advantages",
    "read_reward_log",
    "scan_solution",
    "score_answer",
    "score_batch",
    "score_completion",
    "summarize_by_step",
]
