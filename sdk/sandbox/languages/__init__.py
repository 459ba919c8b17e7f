"""Languages other than Python: toolchain discovery, build/run specs, verdicts.

| language   | framework | toolchain (searched in /usr/local/bin:/usr/bin:/bin only) | per-test results from |
|------------|-----------|-------------------------------------------|-------------------------------------|
| javascript | node      | node (>= 20)                              | ``node --test`` JUnit reporter      |
| typescript | node      | tsc + node (untested here: no tsc)        | ``node --test`` JUnit reporter      |
| c / cpp    | tltest    | gcc / g++                                 | ``tl_test.h`` (forks per test)      |
| java       | junit     | javac, java, Debian ``junit5`` jars       | ``TlJUnit.java`` on the fd-3 pipe   |
| go         | go        | go                                        | ``go test -c``, ``go tool test2json`` |
| go (repo)  | go_repo   | go                                        | signed fd-3 lines of :mod:`.goguard`  |
| rust       | rust      | rustc                                     | libtest output of ``rustc --test``  |

Only toolchains the sandbox uid can see are used: rustup/pyenv under root's 0700 home are
unreachable, so the system packages are searched (``.ci/run`` installs them). A missing
toolchain gives ``toolchain_unavailable`` (an infrastructure status: the task is excluded,
never scored 0); :func:`toolchain_status` answers before training starts (field case S3).

Everything (copy to ``$TMPDIR/build``, compile with ``compile_timeout_s``, run with ``timeout_s``)
happens inside one sandbox execution through ``_runner/tl_build.py``. Runtimes that reserve
large virtual memory (JVM, Go, rustc, node) get an address-space floor of
:data:`AS_FLOOR_MB` (an address-space limit of 1 GB breaks the JVM, measured here); Go and
Rust get floors for the scratch tmpfs (build cache) and the file-size limit (linked binaries).
Verdict channels (issue 14): C/C++ results come only from ``tl_test.h``'s fd-3 pipe, tagged with a
nonce, written by a runner that starts from ``.preinit_array`` and never runs solution code
(constructors run in the test children only; ``tl_build.py`` refuses a binary with IFUNC
resolvers, extra preinit entries or exported functions: flag ``runner_tampering``), through
direct syscalls (stdout is never read for verdicts); node tests run with ``tl_node_guard.cjs`` preloaded from the read-only task
folder (``assert``, ``node:test``, ``require`` and ``module.register`` frozen; with test dependencies a
bare import resolves from their read-only folder) and the JUnit report on the reporter's
stdout (node's JUnit reporter wrapped by ``tl_node_report.cjs``, also from the read-only folder: a
test file that fails as a whole, e.g. ``Cannot find module 'x'`` while loading, keeps its stderr's
tail as the failure's text, where node's says only "test failed"). Java tests run under our launcher ``TlJUnit.java`` (JUnit Platform API), which reads a
random key from fd 4 before any test class initialises and reports each test once on fd 3, each
line signed with the key and numbered (no nonce a scan of the JVM's memory could match; a line
it did not sign is ``channel_forged``, flag ``runner_tampering``; no report file is read, so a
report the solution writes counts for nothing). Go change tasks (``go_repo``) report the same way
from a guard package that every module package imports, so it reads its key first
(:mod:`.goguard`). Test sources of C/C++, Java, Rust,
single-package Go and JavaScript (CommonJS and ES modules) travel on the driver's stdin and are deleted before the
program runs, a decoy under each name reporting any open (``tests_read``: flag ``reads_tests``); Java's
test classes are then read into memory, deleted and defined by ``TlJUnit``; each node test file runs in
a node run of its own, its source on a pipe (``TL_TEST_FD``) that ``tl_node_guard.cjs`` drains and
compiles in place of the decoy (``_runner/tl_offdisk.py``); a key leads that pipe, and the guard signs each
test's own outcome with it, so a result frame rewritten between node's child and its runner is caught
(:mod:`.nodesign`: ``runner_tampering``). Go tests in several folders and
TypeScript tests still run beside their sources. Whole-file Go and
Rust results still come from output the candidate's process could imitate; the reward counts every declared test exactly once (see ``sdk.rewards``), so an
imitated line next to the real one is a duplicate.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, TestOutcome
from sdk.sandbox.languages import goguard, gorepo, nodesign, reports
from sdk.sandbox.pyruntime import RUNNER_DIR
from sdk.sandbox.python_lang import _events
from sdk.sandbox.workspace import Workspace, safe_relpath
from sdk.types import Framework, Language

SEARCH = "/usr/local/bin:/usr/bin:/bin"
AS_FLOOR_MB = 4096
JARS = ("/usr/share/java/junit-platform-console-standalone.jar", "/usr/share/java/junit4.jar",
        "/usr/share/java/hamcrest-core.jar")
MEMORY_SIGNS = ("OutOfMemoryError", "std::bad_alloc", "memory allocation of", "heap out of memory",
                "runtime: out of memory", "cannot allocate memory", "MemoryError")
SPEC_FILE = ".tl_spec.json"
GUARD_FILE = ".tl_node_guard.cjs"
REPORTER_FILE = ".tl_node_report.cjs"   # node's JUnit reporter, keeping a test file's load error
LAUNCHER_FILE = "TlJUnit.java"
OFF_DISK = (Language.C, Language.CPP, Language.JAVA, Language.RUST)   # compiled first: tests on stdin, gone at run time


@dataclass(frozen=True)
class LangSpec:
    """How one language is built and tested. ``tools``: executables that must exist;
    ``files``: paths (jars) that must exist; ``as_floor_mb``: address-space floor."""

    language: Language
    framework: Framework
    tools: tuple[str, ...]
    files: tuple[str, ...] = ()
    as_floor_mb: int = 0
    exts: tuple[str, ...] = field(default=())
    scratch_floor_mb: int = 0
    fsize_floor_mb: int = 0


SPECS = {
    Language.JAVASCRIPT: LangSpec(Language.JAVASCRIPT, Framework.NODE, ("node",), as_floor_mb=AS_FLOOR_MB),
    Language.TYPESCRIPT: LangSpec(Language.TYPESCRIPT, Framework.NODE, ("tsc", "node"), as_floor_mb=AS_FLOOR_MB),
    Language.C: LangSpec(Language.C, Framework.TLTEST, ("gcc",), exts=(".c",)),
    Language.CPP: LangSpec(Language.CPP, Framework.TLTEST, ("g++",), exts=(".cpp", ".cc", ".cxx")),
    Language.JAVA: LangSpec(Language.JAVA, Framework.JUNIT, ("javac", "java"), JARS, AS_FLOOR_MB, (".java",)),
    Language.GO: LangSpec(Language.GO, Framework.GO, ("go",), as_floor_mb=AS_FLOOR_MB, scratch_floor_mb=512, fsize_floor_mb=128),
    Language.RUST: LangSpec(Language.RUST, Framework.RUST, ("rustc",), as_floor_mb=AS_FLOOR_MB, exts=(".rs",),
                            scratch_floor_mb=512, fsize_floor_mb=128),
}


def toolchain_status(language: Language, search: str | None = None) -> str | None:
    """None when ``language`` can run here, else the reason (for ``toolchain_unavailable``).
    ``search``: PATH-style folders (default :data:`SEARCH`). Python always runs (see
    :mod:`sdk.sandbox.pyruntime`). Call it for every language of a task set before training."""
    search = search or SEARCH
    if language == Language.PYTHON:
        return None
    spec = SPECS[language]
    missing = [t for t in spec.tools if shutil.which(t, path=search) is None]
    missing += [f for f in spec.files if not os.path.exists(f)]
    if missing:
        return (f"{language.value} toolchain unavailable: {', '.join(missing)} not found in {search} "
                f"(toolchains under /root are unreachable by the sandbox uid; install the system packages)")
    return None


def execute(backend, req: ExecRequest, uid: int | None, deps: str | None = None) -> ExecResult:
    """Build and test ``req`` in ``backend``; see the module docstring. ``deps``: host folder of the
    request's Node test dependencies (:mod:`sdk.sandbox.npmdeps`), bound read-only and linked as
    ``node_modules`` beside the task's files."""
    spec = SPECS.get(req.language)
    if spec is None:
        return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=f"no runner for {req.language.value}")
    if req.framework not in (spec.framework, Framework.SCRIPT if spec.framework == Framework.TLTEST else spec.framework,
                             Framework.GO_REPO if spec.framework == Framework.GO else spec.framework):
        return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=f"{req.language.value} supports framework "
                          f"`{spec.framework.value}`, not `{req.framework.value}`")
    reason = toolchain_status(req.language)
    python = backend.python(uid)
    if reason or python is None:
        return ExecResult(status=ExecStatus.TOOLCHAIN_UNAVAILABLE, detail=reason or "no Python for the build driver")
    files = dict(req.files)
    files[req.target_path] = req.prelude + ("\n" if req.prelude and not req.prelude.endswith("\n") else "") + req.solution
    files.update(req.tests)
    for p in files:
        safe_relpath(p)
    build = _build_spec(spec, req, files)
    if deps is not None:   # ESM resolves through the link; the guard pins CommonJS lookups to the mount
        build["links"] = {"node_modules": backend.deps_path(deps) + "/node_modules"}
        build["env"]["TL_NODE_DEPS"] = backend.deps_path(deps)
    files[SPEC_FILE] = json.dumps(build)
    # compiled languages: the tests travel on stdin, so the program under test never reads their source
    secret = {p: files.pop(p) for p in req.tests} if spec.language in OFF_DISK or _go_off_disk(req) or _js_off_disk(req) else {}
    lim = req.limits
    limits = lim.model_copy(update={"memory_mb": max(lim.memory_mb, spec.as_floor_mb),
                                    "scratch_mb": max(lim.scratch_mb, spec.scratch_floor_mb),
                                    "file_size_mb": max(lim.file_size_mb, spec.fsize_floor_mb)})
    argv = [python, "-I", "-S", "-B", backend.runtime() + "/tl_build.py", "--fd", "{report_fd}", "--spec", SPEC_FILE]
    nonce = secrets.token_hex(16)
    with Workspace(files, uid, deps=deps) as ws:
        raw = backend.run(argv, ws, limits, uid, (nonce + "\n").encode() + (json.dumps(secret).encode() if secret else b""),
                          timeout_s=req.limits.compile_timeout_s + req.limits.timeout_s + 2)
    return _verdict(spec, req, raw, _events(raw.report, nonce))


def _go_repo_build_failure(req: ExecRequest, raw, tests: tuple[TestOutcome, ...]) -> str:
    """The build errors of a ``go_repo`` run ('' for other runs): its standard error's tail."""
    if req.framework != Framework.GO_REPO:
        return ""
    err = raw.stderr.decode("utf-8", "replace").strip()
    return f"some packages' tests did not build ({len(tests)} tests ran):\n{err[-1500:]}" if err else ""


def _build_spec(spec: LangSpec, req: ExecRequest, files: dict[str, str]) -> dict:
    """The JSON spec for ``tl_build.py``; adds generated files to ``files``."""
    def which(tool: str) -> str:
        return shutil.which(tool, path=SEARCH) or tool
    srcs = sorted(p for p in files if p.endswith(spec.exts)) if spec.exts else []
    tests = sorted(req.tests)
    b: dict = {"compile_timeout": req.limits.compile_timeout_s, "run_timeout": req.limits.timeout_s, "env": {}}
    lang = spec.language
    if lang in (Language.C, Language.CPP):
        cc = [which("gcc"), "-std=gnu11"] if lang == Language.C else [which("g++"), "-std=gnu++17"]
        files["tl_test.h"] = (RUNNER_DIR / "tl_test.h").read_text()  # ours, never the task's or the model's
        b |= {"compile": cc + ["-O1", "-I.", "-o", "tl_bin", *srcs, "-lm"], "run": ["./tl_bin"],
              "channel": req.framework == Framework.TLTEST}
        if req.framework == Framework.TLTEST:
            b["elf"] = "tl_bin"   # tl_build.py refuses a program whose code could run before the runner
    elif lang in (Language.JAVASCRIPT, Language.TYPESCRIPT):
        run_tests = tests
        if lang == Language.TYPESCRIPT:
            ts = sorted(p for p in files if p.endswith(".ts"))
            b["compile"] = [which("tsc"), "--module", "commonjs", "--target", "es2020", "--outDir", ".", *ts]
            run_tests = [t[:-3] + ".js" if t.endswith(".ts") else t for t in tests]
        files[GUARD_FILE] = (Path(__file__).parent / "tl_node_guard.cjs").read_text()
        files[REPORTER_FILE] = (Path(__file__).parent / "tl_node_report.cjs").read_text()
        b |= {"run": [which("node"), "--require", "{src}/" + GUARD_FILE, "--test", "--test-reporter={src}/" + REPORTER_FILE,
                      "--test-reporter-destination=stdout", *run_tests]}
        if _js_off_disk(req):   # one node run per test file, its source on a pipe: never on disk (tl_node_guard.cjs)
            b |= {"run": b["run"][:-len(run_tests)], "each": True}
            b["env"]["TL_NODE_TRUST"] = nodesign.trusted_hashes(req.files, req.target_path)   # helpers may register
    elif lang == Language.JAVA:
        cp = ":".join(JARS[1:])
        jvm = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:ActiveProcessorCount=1", "-Xss1m",
               f"-Xmx{max(64, req.limits.memory_mb // 2)}m"]
        files[LAUNCHER_FILE] = (Path(__file__).parent / LAUNCHER_FILE).read_text()  # ours: verdicts on fd 3
        b |= {"compile": [which("javac"), "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:ActiveProcessorCount=1",
                          "-nowarn", "-d", "classes", "-cp", JARS[0] + ":" + cp, *srcs, LAUNCHER_FILE],
              "run": [which("java"), *jvm, "-cp", JARS[0] + ":" + cp + ":classes", "TlJUnit", "classes"],
              "channel": True, "mac": True, "memclasses": "classes"}   # the tests' classes reach TlJUnit on fd 4
    elif lang == Language.GO:
        files.setdefault("go.mod", "module tltask\n\ngo 1.19\n")
        b |= {"run": [which("go"), "test", "-json", "-count=1", "-p=1", "./..."], "mkdirs": ["{tmp}/gocache", "{tmp}/gopath"],
              # one package: its test binary is built first, the tests deleted, then run through test2json
              **({"compile": [which("go"), "test", "-c", "-vet=off", "-o", "tl_bin", "."],
                  "run": ["./tl_bin", "-test.v", "-test.count=1", "-test.paniconexit0"], "filter": [which("go"), "tool", "test2json"]}
                 if _go_off_disk(req) else {}),
              "env": {"GOCACHE": "{tmp}/gocache", "GOPATH": "{tmp}/gopath", "GOFLAGS": "-mod=mod", "GOPROXY": "off",
                      "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOMAXPROCS": "2", "GOWORK": "off"}}
        if req.framework == Framework.GO_REPO:   # built and run by tl_build, verdicts signed (goguard)
            b["gorepo"] = {"go": which("go"), "packages": goguard.instrument(files, req.tests)}
    elif lang == Language.RUST:
        root = "".join(f'include!("{p}");\n' for p in [req.target_path, *tests])
        files["tl_root.rs"] = "#![allow(dead_code, unused_imports)]\n" + root
        b |= {"compile": [which("rustc"), "--edition", "2021", "--test", "-o", "tl_bin", "tl_root.rs"],
              "run": ["./tl_bin", "--test-threads=1"], "nofork": True}   # threads only (_runner/tl_nofork.py)
    return b


def _go_off_disk(req: ExecRequest) -> bool:
    """A whole-file Go task whose tests all sit in the root package: built with ``go test -c`` and run
    without its test sources on disk (issue 14, round 6). Tests in several folders still run through
    ``go test ./...`` with the sources beside the program."""
    return req.language == Language.GO and req.framework == Framework.GO and all("/" not in p for p in req.tests)


def _js_off_disk(req: ExecRequest) -> bool:
    """A JavaScript task whose tests are ``.js``/``.cjs``/``.mjs`` files, CommonJS or ES modules (issue 14:
    the guard serves an ES module test file from memory through a load hook and signs its tests like a
    CommonJS one's): each test file runs in a node run of its own, its source handed to the guard on a
    pipe, a decoy on disk (issue 14, round 6). TypeScript tests still run from their files on disk."""
    return req.language == Language.JAVASCRIPT and bool(req.tests) and all(
        p.endswith((".js", ".cjs", ".mjs")) for p in req.tests)


def _parse(spec: LangSpec, events: list[dict], req: ExecRequest) -> tuple[TestOutcome, ...]:
    run = next((e for e in events if e.get("event") == "run"), {})
    stdout = str(run.get("stdout", ""))
    lang = spec.language
    if req.framework == Framework.GO_REPO:   # only the guard's signed lines (goguard), never the binary's output
        channel = [str(e.get("line", "")) for e in events if e.get("event") == "channel"]
        return tuple(TestOutcome(name=n, outcome=o, message=gorepo.failure_output(stdout, n) if o == "failed" else "")
                     for n, o in goguard.channel_outcomes(channel))
    if lang in (Language.JAVASCRIPT, Language.TYPESCRIPT):  # the reporter's stdout: the tests' own goes elsewhere
        signed = [e for e in events if e.get("event") == "node_signed"]   # one run per file: results signed
        tests = reports.parse_junit(stdout)
        return nodesign.confirm(stdout, tests, [r for e in signed for r in e.get("records") or []]) if signed else tests
    if lang == Language.GO:
        return reports.parse_go_json(stdout)
    if lang == Language.RUST:
        return reports.parse_libtest(stdout)
    channel = [str(e.get("line", "")) for e in events if e.get("event") == "channel"]
    if not channel and not any(e.get("event") == "channel_used" for e in events):
        return reports.parse_tltest(stdout)  # framework "script": the program's own output
    return reports.parse_tltest("\n".join("TLTEST " + ln for ln in channel if ln != "done"), stdout)


def _verdict(spec: LangSpec, req: ExecRequest, raw, events: list[dict]) -> ExecResult:
    kinds = {e.get("event") for e in events}
    tests = _parse(spec, events, req) if "end" in kinds else ()
    run = next((e for e in events if e.get("event") == "run"), {})
    text = raw.stderr.decode("utf-8", "replace") + str(run.get("stdout", "")) + "".join(
        str(e.get("message", "")) for e in events)
    status, detail = _status(req, raw, kinds, tests, run, text)
    if status == ExecStatus.COMPILE_ERROR:   # the compiler's output; go test's (no compile step) is on stderr
        err = raw.stderr.decode("utf-8", "replace").strip()
        detail = next((str(e.get("message", "")) for e in events if e.get("event") == "compile_error"),
                      _go_repo_build_failure(req, raw, tests) or (f"{detail}:\n{err[-1500:]}" if err else detail))[-2000:]
    elif status == ExecStatus.FAILED and _go_repo_build_failure(req, raw, tests):
        detail = (detail + "; " + _go_repo_build_failure(req, raw, tests))[-2000:]
    return ExecResult(status=status, tests=tests, exit_code=run.get("exit", raw.exit_code), flags=_flags(events, tests, spec.language, req.framework),
                      stdout=raw.stdout.decode("utf-8", "replace"), stderr=raw.stderr.decode("utf-8", "replace"),
                      stdout_truncated=raw.stdout_truncated, stderr_truncated=raw.stderr_truncated,
                      wall_s=round(raw.wall_s, 4), cpu_s=round(raw.cpu_s, 4), detail=detail)


# the runner of a channel run (tl_test.h) killed by one of these came to it from the code under test
_SENT = {-signal.SIGKILL, -signal.SIGTERM, -signal.SIGINT, -signal.SIGQUIT, -signal.SIGHUP, -signal.SIGSTOP,
         -signal.SIGUSR1, -signal.SIGUSR2, -signal.SIGALRM}


def _flags(events: list[dict], tests: tuple[TestOutcome, ...], lang: Language,
           framework: Framework | None = None) -> tuple[str, ...]:
    """``runner_tampering`` when the code under test tried to signal the runner or the driver
    (tl_test.h's seccomp guard stopped a test child: ``tampering_signal``), stopped the runner
    (found stopped at the timeout), or killed the C/C++ channel runner with a signal (a JVM may
    also meet the memory cgroup's SIGKILL); for Go and Rust (results parsed from the test binary's
    output) when every result says passed but the binary exited with a failure (issue 14, round 6:
    a line completed by the code under test, a pass printed before closing stdout)."""
    run = next((e for e in events if e.get("event") == "run"), {})
    if framework in (Framework.GO, Framework.RUST) and tests and isinstance(run.get("exit"), int) and run["exit"] > 0 \
            and all(t.outcome in ("passed", "skipped") for t in tests):
        return ("runner_tampering",)
    channel = any(e.get("event") == "channel_used" for e in events) and lang in (Language.C, Language.CPP)
    if any(e.get("event") in ("binary_refused", "channel_forged") for e in events):
        return ("runner_tampering",)
    if any(e.get("event") == "tests_read" for e in events):   # a decoy of a deleted test source was opened
        return ("reads_tests",)
    if any(t.message == "tampering_signal" or t.message.startswith(nodesign.UNSIGNED) for t in tests) or any(
            e.get("event") == "run_timeout" and e.get("stopped") for e in events) or (channel and run.get("exit") in _SENT):
        return ("runner_tampering",)
    return ()


def _status(req, raw, kinds, tests, run, text) -> tuple[ExecStatus, str]:
    if raw.output_exceeded:
        return ExecStatus.OUTPUT_LIMIT, "output flood; run killed"
    if "compile_timeout" in kinds:
        return ExecStatus.TIMEOUT, f"compilation passed {req.limits.compile_timeout_s} s"
    if raw.timed_out or "run_timeout" in kinds:
        return ExecStatus.TIMEOUT, f"wall-clock limit of {req.limits.timeout_s} s reached"
    if "start" not in kinds:
        return ExecStatus.SANDBOX_ERROR, f"the build driver did not start (exit {raw.exit_code}): {text[-500:]}"
    partly_built = req.framework == Framework.GO_REPO and tests   # other packages' tests still ran
    if ("compile_error" in kinds or "[build failed]" in text or "[setup failed]" in text) and not partly_built:
        return ExecStatus.COMPILE_ERROR, "compilation failed"
    ok = "end" in kinds and run.get("exit") == 0 and tests and all(t.outcome in ("passed", "skipped") for t in tests) \
        and any(t.outcome == "passed" for t in tests)
    if ok:
        return ExecStatus.OK, ""
    if any(s in text for s in MEMORY_SIGNS):
        return ExecStatus.MEMORY_LIMIT, f"memory limit reached ({req.limits.memory_mb} MiB requested)"
    if raw.exit_code in (-signal.SIGXCPU,) or run.get("exit") in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return ExecStatus.TIMEOUT, f"CPU limit of {req.limits.cpu_s} s reached"
    if "end" not in kinds:
        return ExecStatus.RUNTIME_ERROR, f"the run ended before reporting (exit {raw.exit_code})"
    if not tests:
        return ExecStatus.RUNTIME_ERROR if run.get("exit") else ExecStatus.FAILED, \
            f"no test results (runner exit {run.get('exit')}): {text[-500:]}"
    bad = [t.name for t in tests if t.outcome not in ("passed", "skipped")]
    if not bad and partly_built:
        return ExecStatus.FAILED, f"{len(tests)} tests passed, other packages' tests did not build"
    return ExecStatus.FAILED, f"{len(bad)} of {len(tests)} tests did not pass: {', '.join(bad[:5])}"
