"""The ``sandbox:`` section of the run configuration (re-exported by :mod:`sdk.config`).

Kept next to the sandbox so :func:`sdk.sandbox.make_sandbox` needs nothing above it; the resource
limits are the contract's :class:`~sdk.sandbox.contract.Limits` (part of every ``ExecRequest``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sdk.sandbox.contract import Limits
from sdk.types import ConfigModel as _Cfg


class RaySandboxConfig(_Cfg):
    """Ray scale-out of the sandbox (``sandbox.backend: ray``, the ``ray`` extra)."""

    address: str | None = Field(None, description="Ray cluster address (auto, ray://host:10001); None: a local cluster")
    cpus_per_request: float = Field(1.0, gt=0, description="CPUs Ray reserves per execution")
    local_cpus: int | None = Field(None, gt=0, description="CPUs of a local cluster started here; None: all")
    inner_backend: Literal["auto", "bubblewrap", "process"] = Field(
        "auto", description="the isolation each Ray worker uses")


class SandboxConfig(_Cfg):
    """Where and how untrusted code runs."""

    backend: Literal["auto", "bubblewrap", "process", "ray"] = Field(
        "auto", description="auto: bubblewrap when it works here, otherwise refuses unless allow_unisolated; "
        "ray: the same isolation on Ray workers")
    ray: RaySandboxConfig = Field(default_factory=RaySandboxConfig)
    allow_unisolated: bool = Field(
        False, description="permit the process backend (no namespace isolation) for untrusted code")
    concurrency: int = Field(0, ge=0, description="parallel executions; 0 = number of CPU cores")
    cache: bool = Field(True, description="cache results by (code, tests, language, limits)")
    limits: Limits = Field(default_factory=Limits)


__all__ = ["Limits", "RaySandboxConfig", "SandboxConfig"]
