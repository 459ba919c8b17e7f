"""Checks before an adapter is served (field cases V1–V4 in CASES.md, "Serving adapters").

- **V1** :func:`lora_rank_plan`: the largest rank of an adapter (``r`` and every
  ``rank_pattern`` entry), rounded up to the server's allowed set and naming the module that
  sets it; above the largest allowed rank: "unservable as an adapter, export merged".
- **V2** :func:`check_adapter_servable`: ``modules_to_save`` touching the embeddings or the
  output head (a vocabulary resize) cannot be served as a LoRA adapter: refused with the merged
  export as the fix.
- **V3** :func:`adapter_digest` (the hash the registry records and the server recomputes on
  load; an empty checkpoint folder is an error) and :func:`check_probe` (a probe prompt's
  log-probabilities from the server match the ones recorded from the training model).
- **V4** :func:`check_weight_sync`: a weight sync ships at least one adapter tensor, not all of
  them zero, and its payload hash differs from the previous sync's. Publishing a version to a
  server is such a sync: :func:`preflight_adapter` applies it to the adapter's weights file
  (the payload must differ from every other version of the same name the server holds).

:func:`preflight_adapter` runs V1, V2, the V3 digest and V4 on one folder before it is served
(the CPU server on every load, ``tuneloop adapters serve --vllm`` on every version before it
prints vLLM's command); the probe half of V3 needs the loaded model and is run by the server
(:meth:`sdk.serve.multi.MultiAdapterModel.load`). Pure functions over folders, dicts and
tensors; no server or registry is needed to test them.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any, Mapping, Sequence

from sdk.errors import ModelError
from sdk.types import Frozen

VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 512)
_WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
_UNSERVABLE_SAVED = ("embed_tokens", "lm_head", "wte", "embed_in", "embed_out", "output")


class ServeError(ModelError):
    """An adapter cannot be served as it is (rank, saved modules, hash, probe or sync)."""


class RankPlan(Frozen):
    """What a LoRA server needs to load an adapter (V1).

    Attributes:
        rank: the adapter's largest rank (``r`` or a ``rank_pattern`` value).
        module: the module that sets it (``"*"``: the default ``r``).
        server_rank: ``rank`` rounded up to the allowed set (the ``--max-lora-rank`` to use).
    """

    rank: int
    module: str
    server_rank: int


def read_adapter_config(adapter_dir: str | Path) -> dict[str, Any]:
    """The adapter's ``adapter_config.json``. Raises :class:`ServeError` when absent or invalid."""
    path = Path(adapter_dir) / "adapter_config.json"
    fix = "point at the `adapter` folder of an SFT or RL stage (adapter_config.json + weights)"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ServeError(f"{adapter_dir} is not a PEFT adapter folder ({exc})", fix) from None
    problem = _config_problem(config)
    if problem:
        raise ServeError(f"{path} is not a valid adapter config: {problem}", "copy it again from the run; " + fix)
    return config


def _config_problem(config: Any) -> str:
    """What makes ``config`` unusable as a LoRA adapter config (``""`` when nothing does)."""
    if not isinstance(config, dict):
        return f"not a JSON object (a {type(config).__name__})"
    rank = config.get("r", 8)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank <= 0:
        return f"`r` must be a positive integer, not {rank!r}"
    for key in ("rank_pattern", "alpha_pattern"):
        pattern = config.get(key) or {}
        if not isinstance(pattern, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   for v in pattern.values()):
            return f"`{key}` must map module names to numbers, not {pattern!r:.80}"
    saved = config.get("modules_to_save")
    if saved is not None and not (isinstance(saved, list) and all(isinstance(m, str) for m in saved)):
        return f"`modules_to_save` must be a list of module names or null, not {saved!r:.80}"
    return ""


def lora_rank_plan(config: Mapping[str, Any], allowed: Sequence[int] = VLLM_LORA_RANKS,
                   server_max: int | None = None) -> RankPlan:
    """V1: the rank a server must accept for this adapter config.

    Args:
        config: the adapter's ``adapter_config.json`` as a dict (``r``, optional ``rank_pattern``).
        allowed: the ranks the server accepts (vLLM: 8 ... 512).
        server_max: the server's configured maximum (``--max-lora-rank``), when fixed already.
    Raises:
        ServeError: the rank is above every allowed rank ("unservable as an adapter, export
            merged"), or above ``server_max`` (names the module and the rank to configure).
    """
    rank, module = int(config.get("r", 8)), "*"
    for name, value in (config.get("rank_pattern") or {}).items():
        if int(value) > rank:
            rank, module = int(value), name
    fitting = [a for a in sorted(allowed) if a >= rank]
    where = f"rank {rank} (set by {'r' if module == '*' else f'rank_pattern[{module!r}]'})"
    if not fitting:
        raise ServeError(f"{where} is above the largest LoRA rank the server allows ({max(allowed)}): "
                         "unservable as an adapter, export merged",
                         "run `tuneloop export CONFIG` and serve the merged model, or retrain with a smaller r")
    plan = RankPlan(rank=rank, module=module, server_rank=fitting[0])
    if server_max is not None and server_max < rank:
        raise ServeError(f"{where} is above the server's maximum LoRA rank {server_max}",
                         f"start the server with --max-lora-rank {plan.server_rank}")
    return plan


def check_adapter_servable(config: Mapping[str, Any]) -> None:
    """V2: refuse an adapter whose ``modules_to_save`` include the embeddings or output head.

    Raises:
        ServeError: such a module is saved in full (after a vocabulary resize the base's
            embeddings no longer match; a LoRA server keeps the base's).
    """
    saved = [m for m in (config.get("modules_to_save") or []) if any(m.endswith(u) for u in _UNSERVABLE_SAVED)]
    if saved:
        raise ServeError(f"the adapter saves {', '.join(saved)} in full (modules_to_save): a LoRA server serves the "
                         "base's embeddings and head, so it would answer with the wrong vocabulary",
                         "export it merged (`tuneloop export CONFIG`; the export's logits are tested against the "
                         "adapter's) and serve the merged folder")


def adapter_digest(adapter_dir: str | Path) -> str:
    """V3: SHA-256 over the adapter's config and weights file (what the registry and server compare).

    Raises:
        ServeError: no ``adapter_config.json``, or no (or an empty) weights file, e.g. a copied
            checkpoint folder that turned out empty.
    """
    folder = Path(adapter_dir)
    read_adapter_config(folder)
    weights = next((folder / f for f in _WEIGHT_FILES if (folder / f).is_file()), None)
    if weights is None or weights.stat().st_size == 0:
        raise ServeError(f"{folder} has no adapter weights (adapter_model.safetensors missing or empty)",
                         "copy the adapter folder again from the run (it may still have been writing)")
    if weights.suffix == ".safetensors":
        _check_safetensors(weights)
    return files_digest([folder / "adapter_config.json", weights])


def _check_safetensors(path: Path) -> None:
    """A safetensors file whose header parses and whose size is the header's end offset (a cut copy
    fails here without torch). Raises :class:`ServeError` naming the file."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(8)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        try:
            header = json.loads(fh.read(n)) if 0 < n <= size - 8 else None
            end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            header = None
    if header is None or 8 + n + end != size:
        why = "its header does not parse" if header is None else f"{size} bytes where its header says {8 + n + end}"
        raise ServeError(f"{path} is truncated or not a safetensors file ({why})",
                         "copy the adapter folder again from the run (it may still have been writing)")


def model_digest(model_dir: str | Path) -> str:
    """SHA-256 over a model folder's ``config.json`` and weight files (``*.safetensors``, ``*.bin``),
    in name order; a name that is not a folder is hashed as its text (a hub id)."""
    folder = Path(model_dir)
    if not folder.is_dir():
        return hashlib.sha256(str(model_dir).encode()).hexdigest()
    files = [folder / "config.json", *sorted(folder.glob("*.safetensors")), *sorted(folder.glob("*.bin"))]
    return files_digest([f for f in files if f.is_file()])


def files_digest(files: Sequence[Path]) -> str:
    """SHA-256 over each file's name and bytes, streamed in 1 MiB blocks."""
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def check_probe(expected: Sequence[float], served: Sequence[float], atol: float = 1e-3) -> None:
    """V3: the server's probe log-probabilities (one per probe token) match the recorded ones.

    Raises:
        ServeError: lengths differ or any token differs by more than ``atol`` nats (the server
            answers with another adapter than the one trained, e.g. a stale step-0 one).
    """
    if len(expected) != len(served):
        raise ServeError(f"probe length differs: recorded {len(expected)} tokens, served {len(served)}",
                         "serve the adapter with the same base model and tokenizer it was trained on")
    worst = max((abs(a - b) for a, b in zip(expected, served)), default=0.0)
    if worst > atol:
        raise ServeError(f"the served adapter is not the trained one: probe log-probabilities differ by up to "
                         f"{worst:.4g} nats (tolerance {atol})",
                         "reload the version on the server (it may hold an older copy) and check its files")


class Preflight(Frozen):
    """What :func:`preflight_adapter` found: the rank plan, the folder digest (V3) and the LoRA payload
    digest (V4)."""

    plan: RankPlan
    sha256: str
    payload_sha256: str


def adapter_tensors(adapter_dir: str | Path) -> dict[str, Any]:
    """The adapter's tensors by name, read from ``adapter_model.safetensors`` (or ``.bin``) on CPU.

    Raises:
        ServeError: no weights file (see :func:`adapter_digest`) or one that cannot be read.
    """
    folder = Path(adapter_dir)
    try:
        if (folder / _WEIGHT_FILES[0]).is_file():
            from safetensors.torch import load_file

            return load_file(str(folder / _WEIGHT_FILES[0]))
        import torch

        return torch.load(folder / _WEIGHT_FILES[1], map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file, whatever the reader raises
        raise ServeError(f"cannot read the adapter weights in {folder}: {type(exc).__name__}: {exc}",
                         "copy the adapter folder again from the run") from None


def preflight_adapter(adapter_dir: str | Path, registered_sha256: str = "", server_max: int | None = None,
                      others: Mapping[str, str] | None = None, label: str = "") -> Preflight:
    """V1, V2, V3 (digest) and V4 for one adapter folder about to be served.

    Args:
        registered_sha256: the registry's digest (``""``: not checked).
        server_max: the server's ``--max-lora-rank`` (``None``: any allowed rank).
        others: label -> payload digest of the other versions of the same name already served.
        label: ``name@N``, for the messages.
    Raises:
        ServeError: the rank or saved modules cannot be served (V1, V2), the folder is not the
            registered adapter or has no weights (V3), the payload has no or only zero LoRA
            tensors, or the same tensors as another served version (V4).
    """
    config = read_adapter_config(adapter_dir)
    check_adapter_servable(config)
    plan = lora_rank_plan(config, server_max=server_max)
    digest = adapter_digest(adapter_dir)
    if registered_sha256 and digest != registered_sha256:
        raise ServeError(f"{label}: the folder {adapter_dir} is not the registered adapter "
                         f"(sha256 {digest[:12]}, registered {registered_sha256[:12]})",
                         "re-copy the adapter the registry recorded, or register this folder as a new version")
    try:
        payload = check_weight_sync(adapter_tensors(adapter_dir), None)
    except ServeError as exc:
        raise ServeError(f"{label}: {exc.what}", exc.fix) from None
    same = [other for other, d in (others or {}).items() if d == payload]
    if same:
        raise ServeError(f"{label}: its LoRA tensors are the same as {same[0]}'s: publishing it would change nothing "
                         "(a training run that did not move the weights, or a copied folder)",
                         "check that the run trained (steps > 0, loss moved) and register its own adapter folder")
    return Preflight(plan=plan, sha256=digest, payload_sha256=payload)


def check_weight_sync(tensors: Mapping[str, Any], previous_digest: str | None) -> str:
    """V4: a weight sync sends at least one non-zero adapter tensor and something new.

    Args:
        tensors: name -> tensor (``torch.Tensor``) of the payload.
        previous_digest: the previous sync's payload digest (``None`` for the first).
    Returns:
        This payload's digest (pass it as ``previous_digest`` next time).
    Raises:
        ServeError: no LoRA tensor in the payload, all of them zero, or the same payload again.
    """
    lora = {k: t for k, t in tensors.items() if "lora_" in k}
    if not lora:
        raise ServeError("the weight sync sent no adapter tensor (only base weights or nothing)",
                         "sync the LoRA tensors (names containing lora_A / lora_B)")
    if all(float(t.abs().sum()) == 0.0 for t in lora.values()):
        raise ServeError(f"the weight sync sent {len(lora)} adapter tensors, all zero: the served policy would not change",
                         "sync after the optimizer step, from the trained model's parameters")
    h = hashlib.sha256()
    for name in sorted(lora):
        h.update(name.encode())
        h.update(lora[name].detach().cpu().contiguous().numpy().tobytes())
    digest = h.hexdigest()
    if digest == previous_digest:
        raise ServeError("the weight sync sent the same adapter tensors as the previous one",
                         "sync after the optimizer step; check that the trainer's weights moved")
    return digest
