"""The example's trainer and evaluator for ``tuneloop loop``, named in ``loop.yaml`` (``trainer:``,
``compare.evaluator:``), so a pass needs no Python glue.

The trainer has the loop's trainer signature (:data:`feedback.loop.Trainer`: ``(run_config,
overrides, run_dir) -> adapter folder``) and stands in for the full pipeline (``tuneloop run``, the
loop's default), which would build a task set from your tests and feedback, train, evaluate pass@k
and gate; that takes longer than an example should. What it does, honestly:

* data: the first pass trains on the bot's existing answers (no summary line); later passes train
  on the corrections users sent (read from the feedback store), continuing the production adapter
  the loop passes as ``sft.init_adapter``. ``example.data: answers`` in the overrides forces the
  first kind (used to build a deliberately bad candidate).
* training: :func:`sdk.train.sft.run_sft` (TRL SFT + PEFT LoRA), the pipeline's own SFT step. It
  gates nothing itself; ``report.json`` in the run folder says what it trained on.

The gate is the loop's: candidate and production answer the same 6 held-out questions (never
trained on) and the same questions replayed from the latest rated interactions, with the same
seeds (:mod:`feedback.versus`); the evaluator here scores an answer 1 when it shows the behaviour
users prefer (it opens with ``TL;DR``), else 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import json

import sqlalchemy as sa
import yaml

from examples.production_loop.users import ASKED, HELD_OUT, wanted
from feedback.store import ChatMessage, Correction, sessions
from feedback.versus import CompareTask, GenerationEvaluator, stable_seed
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


def settings(run_config: str | Path) -> dict[str, Any]:
    """The trainer YAML (``base_model``, ``max_steps``, ``learning_rate``, ``lora_r``, ``gate_tokens``)."""
    return yaml.safe_load(Path(run_config).read_text()) or {}


def heldout_tasks() -> list[CompareTask]:
    """The 6 held-out questions, with the answer users want as reference, one seed each."""
    return [CompareTask(f"heldout-{i}", ({"role": "user", "content": q},), f"TL;DR: {s}\n{a}", stable_seed(q))
            for i, (q, s, a) in enumerate(HELD_OUT)]


def make_evaluator(cfg) -> GenerationEvaluator:
    """``compare.evaluator`` of ``loop.yaml``: generation on the base, scored by the preferred behaviour."""
    conf = settings(cfg.path(cfg.run_config))
    return GenerationEvaluator(conf["base_model"], heldout_tasks(), int(conf.get("gate_tokens", 12)),
                               score=lambda task, answer: float(wanted(answer)))


def make_trainer(cfg) -> "ExampleTrainer":
    """``trainer:`` of ``loop.yaml``."""
    return ExampleTrainer(cfg.store_url)


class ExampleTrainer:
    """Train one candidate (see the module docstring).

    Args:
        store_url: the feedback store (corrections are read from it).
    The run config (YAML) holds ``base_model``, ``max_steps``, ``learning_rate``, ``lora_r``.
    """

    def __init__(self, store_url: str) -> None:
        self.store_url = store_url

    def __call__(self, run_config: Path, overrides: dict[str, Any], run_dir: Path) -> Path:
        from sdk.train.config import LoraConfig, SftConfig
        from sdk.train.sft import run_sft

        conf = settings(run_config)
        parent = overrides.get("sft.init_adapter")
        use_answers = parent is None or overrides.get("example.data") == "answers"
        rows = answer_rows() if use_answers else correction_rows(self.store_url)
        r = int(conf.get("lora_r", 8))
        cfg = SftConfig(max_steps=int(conf.get("max_steps", 30)), learning_rate=float(conf.get("learning_rate", 1e-3)),
                        batch_size=4, save_steps=1000, init_adapter=parent, lora=LoraConfig(r=r, alpha=2 * r))
        result = run_sft(conf["base_model"], rows, cfg, Path(run_dir) / "sft", seed=0, progress=False)
        adapter = Path(run_dir) / "sft" / "adapter"
        write_lineage(adapter, Lineage(stage="sft", base_model=conf["base_model"], parent=parent, steps=result.steps,
                                       rows=result.rows, promotable=True))
        (Path(run_dir) / "report.json").write_text(json.dumps(
            {"data": "answers" if use_answers else "corrections", "rows": len(rows), "steps": result.steps}))
        return adapter
