"""Scale-out: run sandbox requests on a Ray cluster (the ``ray`` extra).

:class:`RaySandbox` keeps the one contract (``ExecRequest`` in, ``ExecResult`` out) and sends each
request to a Ray task. Every Ray worker process builds its own local sandbox once (the same
isolation as on this machine: bubblewrap, or the process backend where the config allows it) and
reuses it; requests and results cross the wire as JSON. Identical requests of a batch are sent
once (a GRPO group of identical completions costs one run), as in the local pool. A Ray failure
for one request (worker died, node lost) becomes ``sandbox_error`` for that request only: an
infrastructure status, masked by the reward, never a score of 0.

Ray 2.60 enables token authentication by default; local clusters in tests set
``RAY_AUTH_MODE=disabled``.
"""

from __future__ import annotations

import os
from sdk.errors import SandboxError
from sdk.sandbox.config import SandboxConfig
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Sandbox

_WORKER_SANDBOX: dict[str, Sandbox] = {}


def _run_on_worker(config_json: str, request_json: str) -> str:
    """Ray task body: run one request with this worker's (cached) local sandbox."""
    from sdk.sandbox.local import make_local_sandbox  # noqa: PLC0415 - only on the worker

    box = _WORKER_SANDBOX.get(config_json)
    if box is None:
        cfg = SandboxConfig.model_validate_json(config_json)
        box = _WORKER_SANDBOX[config_json] = make_local_sandbox(cfg.model_copy(update={"backend": cfg.ray.inner_backend}))
    return box.run_one(ExecRequest.model_validate_json(request_json)).model_dump_json()


class RaySandbox(Sandbox):
    """A :class:`Sandbox` whose executions run as Ray tasks.

    Args:
        config: the sandbox config; ``config.ray.address`` picks the cluster (None: start or join a
            local one), ``config.ray.cpus_per_request`` reserves CPUs per execution,
            ``config.ray.inner_backend`` is the backend each worker uses.
    Raises:
        SandboxError: Ray is not installed or the cluster cannot be reached.
    """

    def __init__(self, config: SandboxConfig) -> None:
        try:
            import ray
        except ImportError as exc:
            raise SandboxError("sandbox.backend `ray` needs Ray", "pip install 'tuneloop[ray]'") from exc
        os.environ.setdefault("RAY_AUTH_MODE", "disabled") if config.ray.address is None else None
        try:
            if not ray.is_initialized():
                ray.init(address=config.ray.address, include_dashboard=False, log_to_driver=False,
                         ignore_reinit_error=True, num_cpus=config.ray.local_cpus)
        except Exception as exc:  # noqa: BLE001 - Ray raises many types for an unreachable cluster
            raise SandboxError(f"cannot connect to Ray at {config.ray.address or 'a local cluster'}: {exc}",
                               "check sandbox.ray.address (ray://host:10001 or auto), or unset it for a local cluster") from exc
        self._ray = ray
        self._config_json = config.model_dump_json()
        self._task = ray.remote(num_cpus=config.ray.cpus_per_request, max_retries=1)(_run_on_worker)

    def run_one(self, request: ExecRequest) -> ExecResult:
        """Run one request on the cluster."""
        return self.run([request])[0]

    def run(self, requests: list[ExecRequest]) -> list[ExecResult]:
        """Run ``requests`` concurrently on the cluster; results align with requests."""
        unique: dict[str, ExecRequest] = {}
        for req in requests:
            unique.setdefault(req.cache_key(), req)
        refs = {key: self._task.remote(self._config_json, req.model_dump_json()) for key, req in unique.items()}
        results: dict[str, ExecResult] = {}
        for key, ref in refs.items():
            try:
                results[key] = ExecResult.model_validate_json(self._ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - one lost task costs one request
                results[key] = ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=f"ray: {type(exc).__name__}: {exc}")
        return [results[r.cache_key()] for r in requests]

    def close(self) -> None:
        """Leave the cluster running (it may be shared); nothing to release here."""
