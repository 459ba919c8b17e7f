"""Non-Python languages (placeholder until the runners land): every request is reported as
``toolchain_unavailable`` so it is excluded, never scored 0."""

from __future__ import annotations

from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus


def execute(backend, req: ExecRequest, uid: int | None) -> ExecResult:
    """Run a non-Python request. Not implemented yet: ``toolchain_unavailable``."""
    return ExecResult(status=ExecStatus.TOOLCHAIN_UNAVAILABLE,
                      detail=f"language {req.language.value} is not supported by this sandbox yet")
