"""Expert iteration (rejection-sampling fine-tuning) from the SFT adapter, verified by the sandbox.

Each round: sample ``k`` completions per train task with the current adapter (temperature
``rl.temperature``, stopped at the closing code fence), score them with the run's sandboxed reward,
keep the *verified* ones (status ok, full marks, no integrity flag; at most ``max_per_task``
distinct per task), and fine-tune the adapter on them with TRL's ``SFTTrainer``
(:func:`sdk.train.sft.run_sft`, continuing the adapter). The recipe is:

* ReST-EM — Singh et al. 2023, "Beyond Human Data: Scaling Self-Training for Problem-Solving with
  Language Models" (arXiv:2312.06585): E-step sample and filter by a binary reward, M-step SFT;
* RFT — Yuan et al. 2023, "Scaling Relationship on Learning Mathematical Reasoning with Large
  Language Models" (arXiv:2308.01825): rejection sampling, keep distinct correct paths;
* STaR — Zelikman et al. 2022, "STaR: Bootstrapping Reasoning With Reasoning" (arXiv:2203.14465).

Deviation, for CPU budgets: ReST-EM and STaR restart each round from the base model on all data
so far; here each round *continues* the current adapter on that round's verified completions (plus,
with ``replay_references``, the sampled tasks' references, so the adapter keeps what SFT taught on
the tasks it still fails). With ``rl.eval_midway`` the adapter after ``rounds // 2`` rounds (at
least one) is saved as the midway checkpoint, with the compute spent to reach it.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdk.errors import ConfigError
from sdk.jsonl import write_json
from sdk.tasks.records import Task
from sdk.train.config import RlConfig, SftConfig
from sdk.train.result import TrainResult

log = logging.getLogger(__name__)

Score = Callable[[list[Task], list[str]], Sequence[Any]]
Generate = Callable[[list[list[dict]], int], list[list[tuple]]]
RowOf = Callable[[Task, tuple], dict | None]
"""``(task, sample) -> SFT row`` of a verified sample, None to leave it out (default: the task's prompt and
the sample's text)."""
References = Callable[[Sequence[Task]], list[dict]]
"""``tasks -> SFT rows`` of their references, replayed for the tasks a round did not solve."""


def verified(result: Any) -> bool:
    """A sample worth imitating: judged, status ok, full marks, and no integrity flag raised."""
    from sdk.eval.run import is_pass

    return result is not None and is_pass(result) and not tuple(getattr(result, "flags", ()) or ())


def keep_verified(tasks: Sequence[Task], samples: Sequence[Sequence[tuple]], results: Sequence[Any],
                  max_per_task: int, row_of: RowOf | None = None) -> tuple[list[dict], dict[str, int]]:
    """SFT rows from the verified samples: at most ``max_per_task`` distinct (whitespace-normalised)
    completions per task, in sample order.

    Args:
        tasks: the sampled tasks.
        samples: per task, its ``k`` generations ``(text, n_tokens, ...)``.
        results: the reward results, flat and aligned (task-major).
        row_of: the SFT row of a kept sample (default: prompt + the text as the assistant's answer;
            agentic rollouts give their tool-use conversation, :mod:`sdk.train.agentic_expert`).
    Returns:
        ``(rows, counts)`` with ``counts`` = ``sampled``, ``verified``, ``kept``, ``tasks_solved``.
    """
    rows, n_verified, solved, i = [], 0, 0, 0
    for task, group in zip(tasks, samples):
        seen: set[str] = set()
        for out in group:
            res, i = results[i], i + 1
            if not verified(res):
                continue
            n_verified += 1
            key = " ".join(out[0].split())
            if key in seen or len(seen) >= max_per_task:
                continue
            row = row_of(task, out) if row_of else {"prompt": [m.model_dump() for m in task.prompt],
                                                    "completion": [{"role": "assistant", "content": out[0]}]}
            if row is None:   # row_of refused it (an agentic sample with an invalid call)
                continue
            seen.add(key)
            rows.append(row)
        solved += bool(seen)
    return rows, {"sampled": i, "verified": n_verified, "kept": len(rows), "tasks_solved": solved}


def round_tasks(tasks: Sequence[Task], max_tasks: int | None, seed: int, rnd: int) -> list[Task]:
    """The tasks sampled in round ``rnd``: all, or a seeded draw of ``max_tasks`` (new each round)."""
    pool = [t for t in tasks if t.verifier.kind != "reference"]
    if max_tasks is None or max_tasks >= len(pool):
        return pool
    return random.Random(f"{seed}:{rnd}").sample(pool, max_tasks)


def round_sft_config(rc: RlConfig, sft_cfg: SftConfig) -> SftConfig:
    """The SFT settings of one round: the run's SFT config with the expert-iteration epochs,
    learning rate and batch size, no schedule (rows are few)."""
    ec = rc.expert
    return sft_cfg.model_copy(update={"epochs": ec.epochs, "max_steps": -1, "learning_rate": ec.learning_rate,
                                      "batch_size": ec.batch_size, "token_budget": None})


def run_expert_iteration(model_path: str, adapter_dir: Path | None, tasks: Sequence[Task], score: Score,
                         rc: RlConfig, sft_cfg: SftConfig, out_dir: Path, seed: int, dtype: str = "auto",
                         progress: bool = True, make_generator: Callable[..., Any] | None = None,
                         console: Any = None, replay_rows: Sequence[dict] = (), row_of: RowOf | None = None,
                         references: References | None = None) -> TrainResult:
    """Expert iteration for ``rc.expert.rounds`` rounds; the last adapter goes to ``out_dir/adapter``.

    Args:
        model_path: base model folder.
        adapter_dir: the SFT adapter to start from (None: a fresh LoRA in the first round).
        tasks: train tasks (those without an automatic verifier are skipped).
        score: ``(tasks, completions) -> reward results`` (the sandboxed tiered reward).
        rc: ``cfg.rl`` (``expert``, ``temperature``, ``max_completion_length``, ``eval_midway``).
        sft_cfg: ``cfg.sft`` (LoRA, max_length, truncation), see :func:`round_sft_config`.
        make_generator: ``(model_path, adapter, seed) -> generate`` with ``.close()``; default
            :class:`sdk.generate.HFGenerator` (tests pass a fake).
        replay_rows: prompt-completion rows added to every round that trains (``rl.expert.replay_self_distill``:
            the SFT stage's self-distillation rows), after the verified and reference rows.
        row_of, references: the SFT rows of verified samples and of replayed references (defaults:
            prompt-completion rows; agentic change rollouts give tool-use conversations,
            :class:`sdk.train.agentic_expert.AgenticExpert`).
    Returns:
        :class:`TrainResult` (stage ``rl``) whose ``details`` hold ``rounds`` (per round: counts,
        steps, compute) and, with ``eval_midway``, ``midway`` (``round``, ``compute_s``).
    Raises:
        ConfigError: no task has an automatic verifier.
    """
    from sdk.train.sft import run_sft

    _check_sampleable(tasks)
    make_generator = make_generator or _hf_generator(rc, dtype)
    shutil.rmtree(out_dir / "rounds", ignore_errors=True)  # rounds never resume a stale run's checkpoints
    ec, cpu0, current = rc.expert, time.process_time(), adapter_dir
    rounds, steps, tokens_gen, tokens_trained, midway, history = [], 0, 0, 0, {}, []
    mid_round = max(1, ec.rounds // 2) if rc.eval_midway and ec.rounds > 1 else None
    for rnd in range(ec.rounds):
        part = round_tasks(tasks, ec.max_tasks, seed, rnd)
        rows, counts, generated = sample_round(part, make_generator(model_path, current, seed + rnd), score, ec.k,
                                               ec.max_per_task, out_dir / "rewards.jsonl", rnd + 1, row_of)
        tokens_gen += generated
        record: dict[str, Any] = {"round": rnd + 1, "tasks": len(part), **counts}
        if rows:
            rows += (_replay(part, rows, references) if ec.replay_references else []) + list(replay_rows)
            out = out_dir / "rounds" / str(rnd + 1)
            result = run_sft(model_path, rows, round_sft_config(rc, sft_cfg), out, seed + rnd, dtype, progress,
                             adapter_dir=current)
            history += [{**h, "round": rnd + 1, "step": steps + int(h.get("step", 0))} for h in result.log_history]
            current, steps, tokens_trained = out / "adapter", steps + result.steps, tokens_trained + result.tokens_trained
            record.update(rows=len(rows), replayed=len(replay_rows), steps=result.steps)
        record["compute_s"] = time.process_time() - cpu0
        rounds.append(record)
        _say(console, record)
        if mid_round == rnd + 1 and current is not None:
            _copy_adapter(current, out_dir / "midway" / "adapter")
            midway = {"round": rnd + 1, "step": steps, "compute_s": record["compute_s"]}
    _save_final(current, out_dir)
    write_json(out_dir / "log_history.json", history)
    return TrainResult("rl", steps=steps, rows=sum(r.get("rows", 0) for r in rounds), tokens_trained=tokens_trained,
                       tokens_generated=tokens_gen, log_history=tuple(history),
                       details={"algorithm": "expert_iteration", "rounds": rounds, **({"midway": midway} if midway else {})})


def _save_final(current: Path | None, out_dir: Path) -> None:
    """Copy the last round's adapter to ``out_dir/adapter``.

    Raises:
        ConfigError: no round trained (no verified sample and no SFT adapter to start from).
    """
    if current is None:
        raise ConfigError("expert iteration verified no sample in any round, so there is no adapter to save",
                          "start from an SFT adapter (sft.enabled), raise rl.expert.k or rl.temperature, or use "
                          "rl.algorithm: grpo")
    _copy_adapter(current, out_dir / "adapter")


def _check_sampleable(tasks: Sequence[Task]) -> None:
    if not any(t.verifier.kind != "reference" for t in tasks):
        raise ConfigError("expert iteration has nothing to sample: no train task has an automatic verifier",
                          "add a test-suite source (pytest, jsonl, humaneval), or turn RL off (--set rl.enabled=false)")


def sample_round(part: Sequence[Task], gen: Any, score: Score, k: int, max_per_task: int, log: Path,
                 rnd: int, row_of: RowOf | None = None) -> tuple[list[dict], dict[str, int], int]:
    """One E-step: ``k`` samples per task from ``gen`` (closed after), scored, logged to ``log``,
    filtered by :func:`keep_verified` (rows by ``row_of``). Returns ``(rows, counts, tokens generated)``.

    A generator that streams its batches (``gen.streams_batches``: :class:`sdk.generate.HFGenerator`)
    has each batch scored in one background thread while the next is generated
    (:func:`_sample_scoring`); the samples, the results and their order are those of scoring all
    samples after generation, which is what any other generator gets."""
    if getattr(gen, "streams_batches", False):
        samples, results = _sample_scoring(part, gen, score, k)
        flat_tasks = [t for t in part for _ in range(k)]
    else:
        try:
            samples = gen([[m.model_dump() for m in t.prompt] for t in part], k)
        finally:
            gen.close()
        flat_tasks = [t for t, group in zip(part, samples) for _ in group]
        results = list(score(flat_tasks, [o[0] for group in samples for o in group]))
    _log_rewards(log, rnd, flat_tasks, results)
    rows, counts = keep_verified(part, samples, results, max_per_task, row_of)
    return rows, counts, sum(int(o[1]) for group in samples for o in group)


def _sample_scoring(part: Sequence[Task], gen: Any, score: Score, k: int) -> tuple[list[list[tuple]], list[Any]]:
    """``(samples, results)`` of ``k`` samples per task from a streaming ``gen`` (closed after):
    ``score`` runs on each generated batch (one call at a time, in one thread) while the next batch
    is generated; results come back in the flat order ``task i, sample j -> i * k + j``."""
    from concurrent.futures import ThreadPoolExecutor

    flat_tasks = [t for t in part for _ in range(k)]
    pending: list[tuple[list[int], Any]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tl-sample-score") as scorer:
        def on_batch(idx: list[int], outs: list[tuple]) -> None:
            pending.append((idx, scorer.submit(score, [flat_tasks[i] for i in idx], [o[0] for o in outs])))

        try:
            samples = gen([[m.model_dump() for m in t.prompt] for t in part], k, on_batch=on_batch)
        finally:
            gen.close()
        results: list[Any] = [None] * len(flat_tasks)
        filled: set[int] = set()
        for idx, future in pending:
            got = list(future.result())
            if len(got) != len(idx):
                raise RuntimeError(f"score returned {len(got)} results for {len(idx)} samples")
            for i, res in zip(idx, got):
                results[i] = res
            filled.update(idx)
    missing = [i for i in range(len(results)) if i not in filled]
    if missing:
        raise RuntimeError(f"the generator reported no batch holding samples {missing[:5]} (of {len(results)})")
    return samples, results


def _replay(part: Sequence[Task], rows: Sequence[dict], references: References | None = None) -> list[dict]:
    """References of the sampled tasks that got no verified row this round (SFT's own answers, or
    ``references``' rows)."""
    from sdk.train.sft import sft_rows

    have = {_last_prompt(r) for r in rows}
    todo = [t for t in part if t.prompt[-1].content not in have]
    return references(todo) if references else sft_rows(todo, [])


def _last_prompt(row: dict) -> str:
    """The last prompt message's text of a prompt-completion row, or of a conversation (``messages``:
    the message before its first assistant turn)."""
    if "prompt" in row:
        return row["prompt"][-1]["content"]
    msgs = row["messages"]
    first = next((i for i, m in enumerate(msgs) if m["role"] == "assistant"), len(msgs))
    return msgs[first - 1]["content"] if first else ""


def _log_rewards(path: Path, rnd: int, tasks: Sequence[Task], results: Sequence[Any]) -> None:
    """One line per scored sample (``step`` = round), as GRPO's ``rewards.jsonl``: the report's
    training-flags table reads it."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for task, res in zip(tasks, results):
            fh.write(json.dumps({"step": rnd, "task_id": task.id, "score": getattr(res, "score", None),
                                 "status": str(getattr(getattr(res, "status", None), "value", "")),
                                 "flags": list(getattr(res, "flags", ()) or ())}) + "\n")


def _hf_generator(rc: RlConfig, dtype: str) -> Callable[..., Any]:
    from sdk.generate import HFGenerator

    def make(model_path: str, adapter: Path | None, seed: int):
        return HFGenerator(model_path, adapter, batch_size=rc.expert.gen_batch_size,
                           max_new_tokens=rc.max_completion_length, temperature=rc.temperature, seed=seed, dtype=dtype)

    return make


def _copy_adapter(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("checkpoints"))


def _say(console: Any, r: dict) -> None:
    line = (f"  expert iteration round {r['round']}: {r['verified']}/{r['sampled']} samples verified on "
            f"{r['tasks_solved']}/{r['tasks']} tasks, {r.get('rows', 0)} SFT rows"
            + (f" ({r['replayed']} replayed self-distillation rows)" if r.get("replayed") else "")
            + f", {r['compute_s']:.0f} CPU-s")
    (console.print if console is not None else log.info)(line)
