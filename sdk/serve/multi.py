"""Many LoRA adapters on one base model, switched per request (CPU or any torch device).

:class:`MultiAdapterModel` loads the base once (transformers) and every version of a
:class:`~sdk.serve.routes.RouteTable` as a PEFT adapter on it (``PeftModel.load_adapter``), and
generates with the adapter a request resolved to (``set_adapter`` under a lock: one generation at
a time, the device is the bottleneck anyway). Versions are loaded and unloaded as the table
changes (:meth:`MultiAdapterModel.sync`).

Before a version is served (field cases V1–V4, :func:`sdk.serve.preflight.preflight_adapter`):
its config passes the rank and saved-modules preflight (V1, V2), the folder's digest equals the
registered one (V3: a stale or empty copy is refused), its weights hold non-zero LoRA tensors
that differ from every other loaded version of the name (V4), and once loaded, the probe prompt's
log-probabilities match the ones the registry recorded from the training model (V3; when the
route carries them). :meth:`MultiAdapterModel.probe` also answers the publisher's own check
(:func:`feedback.publish.verify_served`). A version that fails is not served; the failure is
logged and kept in :attr:`MultiAdapterModel.problems`, the others keep serving.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from sdk.serve.preflight import ServeError, check_probe, preflight_adapter
from sdk.serve.probe import PROBE_PROMPT, probe_logprobs
from sdk.serve.routes import RoutedAdapter, RouteTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Generation:
    """One answer: its text, the version that produced it, and token counts."""

    text: str
    version: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


class MultiAdapterModel:
    """A base model with several PEFT adapters, one active per call.

    Args:
        base_dir: the base model folder every adapter was trained on.
        dtype: ``float32`` (CPU default), ``bfloat16`` or ``float16``.
        max_rank: the largest LoRA rank accepted (V1; ``None``: no limit beyond the preflight's).
        probe_atol: tolerance of the probe check on load, nats per token (default 1e-3 in float32,
            0.05 in half precision, whose rounding alone moves log-probabilities by ~1e-2).
    Raises:
        ModelError: the base cannot be loaded.
    """

    def __init__(self, base_dir: str, dtype: str = "float32", max_rank: int | None = None,
                 probe_atol: float | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.base_dir, self.max_rank = base_dir, max_rank
        self.probe_atol = probe_atol if probe_atol is not None else (1e-3 if dtype == "float32" else 0.05)
        self.tokenizer = AutoTokenizer.from_pretrained(base_dir)
        self._base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, dtype)).eval()
        self._model: Any = None  # the PeftModel once an adapter is loaded
        self._names: dict[str, str] = {}  # label -> PEFT adapter name
        self._sha: dict[str, str] = {}
        self._payload: dict[str, str] = {}  # label -> LoRA payload digest (V4)
        self._lock = threading.Lock()
        self._counter = 0
        self.problems: dict[str, str] = {}

    @property
    def loaded(self) -> dict[str, str]:
        """Loaded labels and their adapter digests."""
        return dict(self._sha)

    def load(self, adapter: RoutedAdapter) -> None:
        """Load one version after the preflight (V1–V4), then check its probe (V3).

        Raises:
            ServeError: the preflight refuses it, or its probe log-probabilities differ from the
                registered ones by more than :attr:`probe_atol` nats (it is unloaded again).
        """
        others = {lbl: d for lbl, d in self._payload.items() if lbl.partition("@")[0] == adapter.name}
        found = preflight_adapter(adapter.path, adapter.sha256, self.max_rank, others, adapter.label)
        with self._lock:
            self._counter += 1
            peft_name = f"v{self._counter}"
            if self._model is None:
                from peft import PeftModel

                self._model = PeftModel.from_pretrained(self._base, adapter.path, adapter_name=peft_name).eval()
            else:
                self._model.load_adapter(adapter.path, adapter_name=peft_name)
            self._model.eval()
            self._names[adapter.label], self._sha[adapter.label] = peft_name, found.sha256
            self._payload[adapter.label] = found.payload_sha256
        if adapter.probe:
            try:
                served = self.probe(adapter.label, adapter.probe_prompt or PROBE_PROMPT)["logprobs"]
                check_probe(adapter.probe, served, self.probe_atol)
            except ServeError as exc:
                self.unload(adapter.label)
                raise ServeError(f"{adapter.label}: {exc.what}", exc.fix) from None
        self.problems.pop(adapter.label, None)
        log.info("serving %s from %s (sha256 %s%s)", adapter.label, adapter.path, found.sha256[:12],
                 ", probe matches the training model" if adapter.probe else "")

    def unload(self, label: str) -> None:
        """Drop a loaded version (no-op when not loaded)."""
        with self._lock:
            peft_name = self._names.pop(label, None)
            self._sha.pop(label, None)
            self._payload.pop(label, None)
            if peft_name is not None and self._names:  # PEFT keeps at least one adapter: the last stays, unnamed
                self._model.delete_adapter(peft_name)

    def sync(self, table: RouteTable) -> None:
        """Load the table's versions not loaded yet (or whose digest changed), unload the rest.

        A version that fails its checks is logged, kept in :attr:`problems` and skipped.
        """
        wanted = {a.label: a for a in table.adapters}
        for label in [x for x in self._names if x not in wanted or wanted[x].sha256 not in ("", self._sha[x])]:
            self.unload(label)
        for label, adapter in wanted.items():
            if label in self._names:
                continue
            try:
                self.load(adapter)
            except ServeError as exc:
                self.problems[label] = exc.what
                log.error("not serving %s: %s", label, exc.what)

    def generate(self, label: str, messages: list[dict[str, str]], max_tokens: int = 64,
                 temperature: float = 0.0, seed: int | None = None, min_tokens: int = 0) -> Generation:
        """Answer ``messages`` (chat format) with version ``label`` (at least ``min_tokens`` new tokens).

        Raises:
            KeyError: ``label`` is not loaded (resolve it with :func:`sdk.serve.routes.resolve` first).
        """
        import torch

        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                 return_dict=True)["input_ids"]
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "min_new_tokens": min(min_tokens, max_tokens),
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
        else:
            kwargs.update(do_sample=False)
        with self._lock:
            self._model.set_adapter(self._names[label])
            if seed is not None:
                torch.manual_seed(seed)
            with torch.no_grad():
                out = self._model.generate(input_ids=ids.to(self._model.device), **kwargs)
        new = out[0, ids.shape[1]:]
        eos = self.tokenizer.eos_token_id
        finished = eos is not None and bool((new == eos).any())
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return Generation(text, label, int(ids.shape[1]), int(len(new)), "stop" if finished else "length")

    def probe(self, label: str, prompt: str = PROBE_PROMPT) -> dict[str, Any]:
        """The probe log-probabilities of version ``label`` (V3; compare with the registry's)."""
        with self._lock:
            self._model.set_adapter(self._names[label])
            return probe_logprobs(self._model, self.tokenizer, prompt)
