"""Routes as plain data: which adapter versions a server loads and which answers a request.

A :class:`RouteTable` is what the registry says about one application (built by
``feedback.routes.route_table``, fetched from ``GET /v1/routes``, or written by hand): the base
model, the servable versions (folder, hash, rank) and, per adapter name, the production and canary
versions and the canary's traffic share. ``sdk`` never imports the registry; servers take a table
or a callable returning one.

Request model names (:func:`resolve`):

- ``name@3``: version 3; ``name@production`` / ``name@canary``: the alias target;
- ``name``: the application's traffic: production, except for a sticky ``canary_fraction`` of
  users or conversations (:func:`canary_bucket` of the sticky key), which get the canary. A
  request with no user or conversation id gets production.
"""

from __future__ import annotations

import hashlib
import shlex

from sdk.errors import ModelError
from sdk.serve.preflight import VLLM_LORA_RANKS, ServeError, lora_rank_plan, preflight_adapter
from sdk.types import Frozen


class RoutedAdapter(Frozen):
    """One servable version.

    Attributes:
        name, number: the version (``label`` is ``name@number``).
        path: the adapter folder. sha256: its registered digest (V3). rank: largest LoRA rank.
        state: its registry state (candidate, canary, production).
        probe_prompt, probe: the probe prompt and the log-probabilities (nats, one per token after
            the first) recorded from the trained model at registration (V3); empty: not recorded.
    """

    name: str
    number: int
    path: str
    sha256: str
    rank: int
    state: str = "candidate"
    probe_prompt: str = ""
    probe: tuple[float, ...] = ()

    @property
    def label(self) -> str:
        """``name@number``."""
        return f"{self.name}@{self.number}"


class RoutedName(Frozen):
    """The aliases of one adapter name: production and canary version numbers, the canary's share."""

    name: str
    production: int | None = None
    canary: int | None = None
    canary_fraction: float = 0.0


class RouteTable(Frozen):
    """Everything a server of one application needs (see the module docstring)."""

    application: str
    base_model: str
    adapters: tuple[RoutedAdapter, ...] = ()
    names: tuple[RoutedName, ...] = ()


class NotServedError(ModelError):
    """The requested model is not loaded; the message lists what is."""

    status = 404


def canary_bucket(name: str, sticky_key: str) -> float:
    """A stable number in [0, 1) for (adapter name, user or conversation): below the canary fraction
    means canary. The same key always lands in the same bucket (sticky)."""
    digest = hashlib.sha256(f"{name}\0{sticky_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def resolve(table: RouteTable, model: str, sticky_key: str | None = None, loaded: set[str] | None = None) -> str:
    """The concrete label (``name@N``) that answers a request for ``model``.

    Args:
        table: the routes.
        model: the request's model name (see the module docstring).
        sticky_key: the user or conversation id (bare ``name`` requests only).
        loaded: labels actually loaded (default: every adapter in ``table``).
    Raises:
        NotServedError: unknown name, version or alias, or an alias with no target; lists the
            loaded labels and aliases.
    """
    labels = loaded if loaded is not None else {a.label for a in table.adapters}
    name, _, ref = model.partition("@")
    head = next((n for n in table.names if n.name == name), None)
    if ref.isdigit():
        label = f"{name}@{int(ref)}"
    elif head is None:
        label = None
    elif ref in ("production", "canary"):
        number = head.production if ref == "production" else head.canary
        label = f"{name}@{number}" if number is not None else None
    elif ref == "":
        number = head.production
        if head.canary is not None and sticky_key and canary_bucket(name, sticky_key) < head.canary_fraction:
            number = head.canary
        label = f"{name}@{number}" if number is not None else None
    else:
        label = None
    if label is None or label not in labels:
        raise NotServedError(f"model {model!r} is not served here; loaded: {', '.join(sorted(labels)) or 'none'}"
                             f"{'; aliases: ' + ', '.join(aliases(table)) if aliases(table) else ''}",
                             "ask for one of the loaded names (name@N, name@production, name@canary or name)")
    return label


def aliases(table: RouteTable) -> list[str]:
    """``name@production -> name@3``-style descriptions of the table's aliases."""
    out = []
    for n in table.names:
        if n.production is not None:
            out.append(f"{n.name}@production -> {n.name}@{n.production}")
        if n.canary is not None:
            out.append(f"{n.name}@canary -> {n.name}@{n.canary} ({n.canary_fraction:.0%} of {n.name})")
    return out


def vllm_command(table: RouteTable, port: int = 8000, check: bool = True) -> str:
    """``vllm serve`` for every version of ``table`` on its base (multi-LoRA).

    ``--max-loras`` is the number of versions (all resident at once), ``--max-lora-rank`` the
    largest rank rounded up to vLLM's allowed set (V1); each version is served as ``name@N``.
    With ``check`` every folder first passes :func:`sdk.serve.preflight.preflight_adapter` (V1, V2,
    the V3 digest against the registered one, V4); the probe half of V3 needs the running server
    (``feedback.publish.verify_served`` against a server that answers ``/v1/tuneloop/probe``).

    Raises:
        ServeError: nothing to serve, a rank above vLLM's largest (export merged), or a version
            the preflight refuses (all refusals listed).
    """
    if not table.adapters:
        raise ServeError(f"{table.application} has no live adapter version to serve",
                         "register one and promote it: `tuneloop adapters register`")
    if check:
        refused, payloads = [], {}
        for a in table.adapters:
            try:
                others = {lbl: d for lbl, d in payloads.items() if lbl.partition("@")[0] == a.name}
                payloads[a.label] = preflight_adapter(a.path, a.sha256, None, others, a.label).payload_sha256
            except ServeError as exc:
                refused.append(exc.what if exc.what.startswith(a.label) else f"{a.label}: {exc.what}")
        if refused:
            raise ServeError("not starting vLLM: " + "; ".join(refused),
                             "fix or retire the versions named (tuneloop adapters list), then run it again")
    rank = max(lora_rank_plan({"r": a.rank}, VLLM_LORA_RANKS).server_rank for a in table.adapters)
    args = ["vllm", "serve", table.base_model, "--enable-lora", "--max-loras", str(len(table.adapters)),
            "--max-lora-rank", str(rank), "--port", str(port), "--lora-modules",
            *[f"{a.label}={a.path}" for a in table.adapters]]
    return shlex.join(args)
