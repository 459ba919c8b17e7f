"""The local sandbox: bounded concurrency over slots, a result cache, language dispatch.

Each slot owns one leased uid (:mod:`sdk.sandbox.uids`) when the caller is root, so per-uid limits
(RLIMIT_NPROC) and the clean-up sweep cover exactly one execution at a time. Identical
requests (same code, tests, language, limits: :meth:`ExecRequest.cache_key`) run once per
batch and once per cache lifetime, so a GRPO group of identical completions costs one run.
Infrastructure statuses (``sandbox_error``, ``toolchain_unavailable``) are never cached.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
import sdk.sandbox.deps as deps
import sdk.sandbox.npmdeps as npmdeps
import sdk.sandbox.python_lang as python_lang
from sdk.errors import SandboxError
from sdk.sandbox.backend import Backend, WarmRunner
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Sandbox
from sdk.sandbox.launch import processes_of
from sdk.sandbox.pyruntime import reachable_by_others
from sdk.sandbox.uids import lease_uids
from sdk.sandbox.warm import ServerGone
from sdk.sandbox.workspace import Workspace
from sdk.types import Framework, Language

CACHE_ENTRIES = 65536


def _release(pool: ThreadPoolExecutor, backend: Backend, leases: list) -> None:
    pool.shutdown(wait=True)
    backend.close()
    for lease in leases:
        lease.release()
    leases.clear()


class LocalSandbox(Sandbox):
    """Runs requests on this machine through ``backend``.

    Args:
        backend: a :class:`Backend` (process or bubblewrap).
        concurrency: parallel executions (>= 1).
        cache: keep results by :meth:`ExecRequest.cache_key`.
    """

    def __init__(self, backend: Backend, concurrency: int, cache: bool = True) -> None:
        if concurrency < 1:
            raise SandboxError(f"concurrency must be >= 1, got {concurrency}", "set sandbox.concurrency to 0 (= cores) or more")
        self.backend, self.concurrency = backend, concurrency
        self._leases = lease_uids(concurrency) if os.geteuid() == 0 else []
        self._slots: queue.Queue[int | None] = queue.Queue()
        for slot in range(concurrency):
            self._slots.put(self._leases[slot].uid if self._leases else None)
        self._cache: OrderedDict[str, ExecResult] | None = OrderedDict() if cache else None
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="tl-sandbox")
        # a sandbox dropped without close() still stops its warm servers and frees its uids
        self._finalizer = weakref.finalize(self, _release, self._pool, backend, self._leases)

    # -- public -------------------------------------------------------------------------------
    @property
    def uids(self) -> tuple[int, ...]:
        """The uids this sandbox's slots run as (empty when the caller is not root)."""
        return tuple(lease.uid for lease in self._leases)

    def stray_processes(self) -> list[int]:
        """Processes of this sandbox's uids that are not a warm server: after every execution
        this must be empty (the hostile suite checks it)."""
        warm = self.backend.warm
        keep = warm.server_pids() if warm is not None else set()
        return [p for uid in self.uids for p in processes_of(uid) if p not in keep]

    def run_one(self, request: ExecRequest, use_cache: bool = True) -> ExecResult:
        """Run one request (or serve it from the cache unless ``use_cache`` is False).
        Never raises for bad code: every outcome is an :class:`ExecResult`."""
        return self._run_keyed(request, request.cache_key() if self._cache is not None else "", use_cache)

    def _run_keyed(self, request: ExecRequest, key: str, use_cache: bool = True) -> ExecResult:
        """:meth:`run_one` with ``request``'s cache key computed already (``""`` without a cache:
        hashing a HumanEval request costs about 20 us, a quarter of planning it; issue 14)."""
        hit = self._cached(key) if use_cache else None
        if hit is not None:
            return hit
        uid = self._slots.get()
        try:
            result = self._execute(request, uid)
        finally:
            self._slots.put(uid)
        self._store(key, result)
        return result

    def run(self, requests: list[ExecRequest]) -> list[ExecResult]:
        """Run ``requests`` with at most ``concurrency`` at once; duplicates run once.
        Results align with ``requests``; duplicates after the first come back ``cached=True``."""
        keys = [r.cache_key() for r in requests]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        futures = {k: self._pool.submit(self._run_keyed, requests[i], k) for k, i in first.items()}
        out = []
        for i, k in enumerate(keys):
            res = futures[k].result()
            out.append(res if first[k] == i or res.status.is_infrastructure else res.model_copy(update={"cached": True}))
        return out

    def close(self) -> None:
        """Wait for running executions, stop warm servers, then give the uids back."""
        self._finalizer()

    # -- internals ----------------------------------------------------------------------------
    def _cached(self, key: str) -> ExecResult | None:
        if self._cache is None:
            return None
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit.model_copy(update={"cached": True})
        return None

    def _store(self, key: str, result: ExecResult) -> None:
        if self._cache is None or result.status.is_infrastructure:
            return
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)

    def _execute(self, req: ExecRequest, uid: int | None) -> ExecResult:
        try:
            if req.language == Language.PYTHON:
                return self._python(req, uid)
            import sdk.sandbox.languages as languages  # noqa: PLC0415 - heavier (lxml), only for non-Python
            env = self._deps(req, uid) if req.language in (Language.JAVASCRIPT, Language.TYPESCRIPT) else None
            if isinstance(env, ExecResult):
                return env
            return languages.execute(self.backend, req, uid, deps=env)
        except SandboxError as exc:
            return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=str(exc))

    def _python(self, req: ExecRequest, uid: int | None) -> ExecResult:
        p = python_lang.plan(req)
        if isinstance(p, ExecResult):
            return p
        warm = self.backend.warm
        if warm is not None and req.framework == Framework.SCRIPT and not req.files and not req.requirements:
            return self._python_warm(warm, req, p, uid)
        python = self.backend.python(uid)
        if python is None:
            return ExecResult(status=ExecStatus.TOOLCHAIN_UNAVAILABLE,
                              detail=f"no Python interpreter usable by the {self.backend.name} backend")
        env = self._deps(req, uid)
        if isinstance(env, ExecResult):
            return env
        extra = ["--path", self.backend.deps_path(env)] if env else []
        argv = [python, "-I", "-S", "-B", self.backend.runtime() + "/tl_runner.py", "--fd", "{report_fd}", *extra, *p.argv]
        with Workspace(p.files, uid, deps=env) as ws:
            raw = self.backend.run(argv, ws, req.limits, uid, p.stdin)
        return python_lang.verdict(req, raw, p.nonce)

    def _deps(self, req: ExecRequest, uid: int | None) -> str | ExecResult | None:
        """Host folder of ``req``'s test-dependency environment (built on first use: pip for Python,
        npm for JavaScript/TypeScript, :mod:`sdk.sandbox.npmdeps`), None without requirements, or a
        ``toolchain_unavailable`` result when it cannot be built."""
        if not req.requirements:
            return None
        try:
            if req.language in (Language.JAVASCRIPT, Language.TYPESCRIPT):
                env = npmdeps.ensure_node_env(req.requirements, npmdeps.request_lockfile(req.files))
            else:
                env = deps.ensure_env(req.requirements)
        except SandboxError as exc:
            return ExecResult(status=ExecStatus.TOOLCHAIN_UNAVAILABLE, detail=f"test dependencies: {exc}")
        return str(deps.sandbox_view(env, reachable=uid is None or reachable_by_others(str(env))))

    def _python_warm(self, warm: WarmRunner, req: ExecRequest, p: python_lang.Plan, uid: int | None) -> ExecResult:
        try:
            raw = warm.run(req, p.files[req.target_path], uid, p.nonce)
        except ServerGone as exc:
            return ExecResult(status=ExecStatus.FAILED, detail=f"the execution broke its sandbox slot: {exc}")
        return python_lang.verdict(req, raw, p.nonce)
