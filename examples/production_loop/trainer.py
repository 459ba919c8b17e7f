"""The example's trainer for ``tuneloop loop``: real LoRA SFT on what users wrote back, then a gate.

It has the loop's trainer signature (:data:`feedback.loop.Trainer`: ``(run_config, overrides,
run_dir) -> adapter folder``) and stands in for the full pipeline (``tuneloop run``, the loop's
default), which would build a task set from your tests and feedback, train, evaluate pass@k and
gate; that takes longer than an example should. What it does, honestly:

* data: the first pass trains on the bot's existing answers (no summary line); later passes train
  on the corrections users sent (read from the feedback store), continuing the production adapter
  the loop passes as ``sft.init_adapter``. ``example.data: answers`` in the overrides forces the
  first kind (used to build a deliberately bad candidate).
* training: :func:`sdk.train.sft.run_sft` (TRL SFT + PEFT LoRA), the pipeline's own SFT step.
* gate: answers to held-out questions (never trained on) from the candidate and from its parent,
  scored by the behaviour users prefer; the candidate fails when its rate is below the parent's.
  The verdict goes into the adapter's ``lineage.json``, where the registry reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from examples.production_loop.users import ASKED, HELD_OUT, wanted
from feedback.store import ChatMessage, Correction, sessions
from sdk.run.lineage import Lineage, write_lineage


def answer_rows() -> list[dict]:
    """The bot's existing answers (no summary line) as prompt-completion rows."""
    return [_row(q, a) for q, _, a in ASKED]


def correction_rows(store_url: str, application_id: int = 1) -> list[dict]:
    """Every correction in the store, paired with the question of its interaction."""
    question = sa.select(ChatMessage.content).where(ChatMessage.interaction_id == Correction.interaction_id,
                                                    ChatMessage.role == "user").limit(1).scalar_subquery()
    with sessions(store_url, upgrade=False)() as s:
        pairs = s.execute(sa.select(question, Correction.content).where(Correction.application_id == application_id)
                          .order_by(Correction.id)).all()
    return [_row(q, c) for q, c in pairs if q]


def _row(question: str, answer: str) -> dict:
    return {"prompt": [{"role": "user", "content": question}], "completion": [{"role": "assistant", "content": answer}]}


def heldout_rate(base: str, adapter: str | Path, max_tokens: int) -> tuple[float, list[str]]:
    """(share of held-out answers with the wanted behaviour, the answers), greedy, from the serving model."""
    from sdk.serve.multi import MultiAdapterModel
    from sdk.serve.preflight import adapter_digest
    from sdk.serve.routes import RoutedAdapter

    model = MultiAdapterModel(base)
    model.load(RoutedAdapter(name="gate", number=1, path=str(adapter), sha256=adapter_digest(adapter), rank=64))
    answers = [model.generate("gate@1", [{"role": "user", "content": q}], max_tokens).text for q, _, _ in HELD_OUT]
    return sum(map(wanted, answers)) / len(answers), answers


class ExampleTrainer:
    """Train, evaluate and gate one candidate (see the module docstring).

    Args:
        store_url: the feedback store (corrections are read from it).
        base: the base model folder.
    The run config (YAML) holds ``max_steps``, ``learning_rate``, ``lora_r``, ``gate_tokens``.
    """

    def __init__(self, store_url: str, base: str) -> None:
        self.store_url, self.base = store_url, base
        self.reports: list[dict[str, Any]] = []  # one per call: data, rates, verdict (printed by the script)

    def __call__(self, run_config: Path, overrides: dict[str, Any], run_dir: Path) -> Path:
        from sdk.train.config import LoraConfig, SftConfig
        from sdk.train.sft import run_sft

        settings = yaml.safe_load(Path(run_config).read_text()) or {}
        parent = overrides.get("sft.init_adapter")
        use_answers = parent is None or overrides.get("example.data") == "answers"
        rows = answer_rows() if use_answers else correction_rows(self.store_url)
        cfg = SftConfig(max_steps=int(settings.get("max_steps", 30)), learning_rate=float(settings.get("learning_rate", 1e-3)),
                        batch_size=4, save_steps=1000, init_adapter=parent,
                        lora=LoraConfig(r=int(settings.get("lora_r", 8)), alpha=2 * int(settings.get("lora_r", 8))))
        result = run_sft(self.base, rows, cfg, Path(run_dir) / "sft", seed=0, progress=False)
        adapter = Path(run_dir) / "sft" / "adapter"
        tokens = int(settings.get("gate_tokens", 12))
        tuned, answers = heldout_rate(self.base, adapter, tokens)
        before = heldout_rate(self.base, parent, tokens)[0] if parent else None
        reasons = () if before is None or tuned >= before else (
            f"held-out TL;DR rate fell from {before:.2f} (parent) to {tuned:.2f}",)
        write_lineage(adapter, Lineage(stage="sft", base_model=self.base, parent=parent, steps=result.steps,
                                       rows=result.rows, promotable=not reasons, gate_reasons=reasons,
                                       heldout_pass_at_1={"tuned": tuned, **({} if before is None else {"parent": before})}))
        self.reports.append({"data": "answers" if use_answers else "corrections", "rows": len(rows),
                             "steps": result.steps, "parent_rate": before, "tuned_rate": tuned,
                             "sample": answers[0], "passed": not reasons, "reasons": reasons})
        return adapter
