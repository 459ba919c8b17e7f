"""Replay of the base model's own verified answers (``sft.self_distill``), mixed into SFT.

Tuning a small model on one library's house style (``return ok(...)``, ``-> Result``) teaches it to
answer *every* prompt in that style: on the quickstart the SFT adapter wrapped plain-Python answers
in ``ok(...)`` and the OOD split fell from 9/30 to 0/30 (NameError on ``ok``). The remedy here is
replay of what the base model already does right: the train tasks of ``self_distill.domains`` (a
pool of general tasks with tests) give no reference rows; the *base* model samples ``k`` answers per
pool task, the sandbox keeps those that pass every test with no integrity flag, and those become SFT
rows next to the house-style rows. The adapter then sees that a plain prompt gets plain Python, and
it learns nothing the base model could not already do (the rows are its own outputs), so a gain on
the OOD split cannot come from the pool's references. This is self-distillation / replay in the
sense of rejection-sampling fine-tuning (RFT, Yuan et al. 2023, arXiv:2308.01825) applied to the
base model, and of experience replay against forgetting in continual fine-tuning (e.g. Scialom et
al. 2022, "Fine-tuned Language Models are Continual Learners", arXiv:2205.12393, rehearsal).

Only train-split tasks may be in the pool; held-out and OOD tasks never are (:func:`split_pool`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdk.errors import ConfigError
from sdk.tasks.records import Split, Task
from sdk.train.config import SelfDistillConfig


def in_domains(task: Task, domains: Sequence[str]) -> bool:
    """True when ``task.domain`` is one of ``domains`` or under one (``general`` covers ``general/x``)."""
    return any(task.domain == d or task.domain.startswith(d.rstrip("/") + "/") for d in domains)


def split_pool(tasks: Sequence[Task], cfg: SelfDistillConfig) -> tuple[list[Task], list[Task]]:
    """``(others, pool)``: the tasks outside ``cfg.domains`` and the replay pool inside them (empty
    when self-distillation is off).

    Raises:
        ConfigError: a pool task is not in the train split (held-out and OOD tasks never feed training).
    """
    if not cfg.enabled:
        return list(tasks), []
    pool = [t for t in tasks if in_domains(t, cfg.domains)]
    leaked = [t for t in pool if t.split != Split.TRAIN]
    if leaked:
        raise ConfigError(f"sft.self_distill would sample {len(leaked)} {leaked[0].split.value} task(s) "
                          f"(e.g. {leaked[0].id} of {leaked[0].domain}); only train tasks may feed training",
                          "give the replay pool's source `split: train`, or remove its domain from "
                          "sft.self_distill.domains")
    return [t for t in tasks if not in_domains(t, cfg.domains)], pool


def distill_rows(model_path: str, pool: Sequence[Task], score: Callable[[list[Task], list[str]], Sequence[Any]],
                 cfg: SelfDistillConfig, log: Path, seed: int, dtype: str = "auto",
                 make_generator: Callable[..., Any] | None = None) -> tuple[list[dict], dict[str, int]]:
    """SFT rows from the base model's verified answers on ``pool``.

    Args:
        model_path: the base model folder (no adapter: these are the base model's own answers).
        pool: train tasks with an automatic verifier (see :func:`split_pool`).
        score: ``(tasks, completions) -> reward results`` (the run's sandboxed tiered reward).
        log: ``rewards.jsonl``-style file, one line per scored sample.
        make_generator: ``(model_path, seed) -> generate`` with ``.close()``; default
            :class:`sdk.generate.HFGenerator` at ``cfg.temperature`` (tests pass a fake).
    Returns:
        ``(rows, counts)``: prompt-completion rows (at most ``cfg.max_per_task`` distinct per task, each
        in the answer format, :func:`answer_format`) and
        ``sampled``, ``verified``, ``kept``, ``tasks_solved``, ``tasks``.
    """
    from sdk.train.expert_iteration import sample_round

    pool = [t for t in pool if t.verifier.kind != "reference"]
    if not pool:
        return [], {"sampled": 0, "verified": 0, "kept": 0, "tasks_solved": 0, "tasks": 0}
    if make_generator is None:
        from sdk.generate import HFGenerator

        def make_generator(path: str, seed_: int):
            return HFGenerator(path, None, batch_size=cfg.gen_batch_size, max_new_tokens=cfg.max_new_tokens,
                               temperature=cfg.temperature, seed=seed_, dtype=dtype)

    log.unlink(missing_ok=True)
    rows, counts, _ = sample_round(pool, make_generator(model_path, seed), score, cfg.k, cfg.max_per_task, log, 0)
    by_prompt = {t.prompt[-1].content: t for t in pool}
    return [answer_format(r, by_prompt[r["prompt"][-1]["content"]]) for r in rows], {**counts, "tasks": len(pool)}


def answer_format(row: dict, task: Task) -> dict:
    """``row`` with its completion rewritten as the code the reward ran, in one fenced block (the
    format SFT's reference rows teach, :func:`sdk.train.sft.answer_text`): a verified answer that
    opened with prose ("Here's a function...") or trailed a note after the fence teaches only its code.
    The code itself is the model's, as extracted by :func:`sdk.rewards.extract.extract_code`."""
    from sdk.rewards.extract import extract_code
    from sdk.tasks.records import UnitTestVerifier

    ver = task.verifier
    if not isinstance(ver, UnitTestVerifier):
        return row
    code = extract_code(row["completion"][0]["content"], ver.entry_point, ver.language).code
    if code is None:
        return row
    fenced = f"```{ver.language.value}\n{code.strip(chr(10))}\n```"
    return {**row, "completion": [{"role": "assistant", "content": fenced}]}
