"""Many LoRA adapters on one base model, switched per request (CPU or any torch device).

:class:`MultiAdapterModel` loads the base once (transformers) and every version of a
:class:`~sdk.serve.routes.RouteTable` as a PEFT adapter on it (``PeftModel.load_adapter``), and
generates with the adapter a request resolved to (``set_adapter`` under a lock: one generation at
a time, the device is the bottleneck anyway). Versions are loaded and unloaded as the table
changes (:meth:`MultiAdapterModel.sync`).

Before a version is served (field cases V1–V3, :mod:`sdk.serve.preflight`): its config passes
the rank and saved-modules preflight, the folder's digest equals the registered one (a stale or
empty copy is refused), and :meth:`MultiAdapterModel.probe` gives the probe log-probabilities for
the publisher to compare with the trained model's. A version that fails is not loaded; the
failure is logged and kept in :attr:`MultiAdapterModel.problems`, the others keep serving.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from sdk.serve.preflight import ServeError, adapter_digest, check_adapter_servable, lora_rank_plan, read_adapter_config
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
    Raises:
        ModelError: the base cannot be loaded.
    """

    def __init__(self, base_dir: str, dtype: str = "float32", max_rank: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.base_dir, self.max_rank = base_dir, max_rank
        self.tokenizer = AutoTokenizer.from_pretrained(base_dir)
        self._base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, dtype)).eval()
        self._model: Any = None  # the PeftModel once an adapter is loaded
        self._names: dict[str, str] = {}  # label -> PEFT adapter name
        self._sha: dict[str, str] = {}
        self._lock = threading.Lock()
        self._counter = 0
        self.problems: dict[str, str] = {}

    @property
    def loaded(self) -> dict[str, str]:
        """Loaded labels and their adapter digests."""
        return dict(self._sha)

    def load(self, adapter: RoutedAdapter) -> None:
        """Load one version after the preflight (V1, V2) and digest check (V3).

        Raises:
            ServeError: the preflight refuses it, or the folder's digest differs from the registered one.
        """
        config = read_adapter_config(adapter.path)
        check_adapter_servable(config)
        lora_rank_plan(config, server_max=self.max_rank) if self.max_rank else lora_rank_plan(config)
        digest = adapter_digest(adapter.path)
        if adapter.sha256 and digest != adapter.sha256:
            raise ServeError(f"{adapter.label}: the folder {adapter.path} is not the registered adapter "
                             f"(sha256 {digest[:12]}, registered {adapter.sha256[:12]})",
                             "re-copy the adapter the registry recorded, or register this folder as a new version")
        with self._lock:
            self._counter += 1
            peft_name = f"v{self._counter}"
            if self._model is None:
                from peft import PeftModel

                self._model = PeftModel.from_pretrained(self._base, adapter.path, adapter_name=peft_name).eval()
            else:
                self._model.load_adapter(adapter.path, adapter_name=peft_name)
            self._model.eval()
            self._names[adapter.label], self._sha[adapter.label] = peft_name, digest
        self.problems.pop(adapter.label, None)
        log.info("serving %s from %s (sha256 %s)", adapter.label, adapter.path, digest[:12])

    def unload(self, label: str) -> None:
        """Drop a loaded version (no-op when not loaded)."""
        with self._lock:
            peft_name = self._names.pop(label, None)
            self._sha.pop(label, None)
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
