"""The closing-fence stopping criterion's cost, before and after it stopped decoding finished rows.

Generates one batch the way the eval stage does (:class:`sdk.generate.HFGenerator`: greedy, left
padding, batch ``--batch``, ``--max-new-tokens``), keeps the full token rows, then replays
``generate``'s per-step calls of the criterion on them twice in this one process: the previous
criterion (every row decoded at every step, kept here as :func:`legacy_verdicts`) and
:class:`sdk.generate.FenceStop`. It checks that every still-running row gets the same verdict at
every step (a finished row's verdict is never read by ``generate``) and prints both CPU times as a
ratio next to the batch's generation CPU. Prompts: the quickstart's ``basics.jsonl`` and
``general.jsonl`` tasks (no sandbox), or ``--tasks RUN/tasks/tasks.jsonl``.

    nice -n 10 .venv/bin/python bench/fence_stop.py --batches 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]


def legacy_verdicts(tokenizer, prompt_len: int, input_ids) -> list[bool]:
    """The criterion before this change: every row decoded and judged at every step."""
    from sdk.generate import FENCE, closed_fence

    texts = tokenizer.batch_decode(input_ids[:, prompt_len:], skip_special_tokens=True)
    return [closed_fence(t) and (t.endswith("\n") or t.rstrip().endswith(FENCE)) for t in texts]


def prompts(args) -> list[list[dict]]:
    """Chat prompts of the quickstart's jsonl tasks (system prompt added), or of a saved task set."""
    if args.tasks:
        from sdk.tasks.taskset import TaskSet

        tasks = sorted(TaskSet.load(args.tasks).tasks, key=lambda t: t.id)
    else:
        from sdk.config import load_config
        from sdk.run.stage_tasks import with_system
        from sdk.sources import resolve_source

        cfg = load_config(str(_HERE.parent / "examples/quickstart/config.yaml"), {})
        tasks = []
        for src in cfg.sources:
            if src.type == "jsonl":
                read = resolve_source(src.type)(src.options, cfg.base_dir, src.domain).read().tasks
                tasks += [t.with_(prompt=with_system(t.prompt, cfg.tasks.system_prompt)) for t in read]
    return [[m.model_dump(mode="json") for m in t.prompt] for t in tasks]


def replay(stop, prompt_len: int, full) -> tuple[float, list[list[bool]]]:
    """CPU seconds of calling the criterion ``stop`` on every step's prefix of ``full`` (as
    ``generate`` does), and its verdicts per step and row."""
    verdicts = []
    start = time.process_time()
    for step in range(1, full.shape[1] - prompt_len + 1):
        verdicts.append([bool(v) for v in stop(full[:, :prompt_len + step])])
    return time.process_time() - start, verdicts


def running(verdicts: list[list[bool]]) -> list[list[bool]]:
    """Per step, the verdicts of the rows still running then (up to and including the step a row
    was first judged done, whose verdict ``generate`` reads; nothing of a row is read after it)."""
    first = [next((s for s, step in enumerate(verdicts) if step[i]), len(verdicts)) for i in range(len(verdicts[0]))]
    return [[v for i, v in enumerate(step) if s <= first[i]] for s, step in enumerate(verdicts)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--tasks", help="a task set's tasks.jsonl (default: the quickstart's jsonl tasks)")
    args = ap.parse_args()

    import torch
    from transformers import StoppingCriteriaList

    from sdk.generate import FenceStop, HFGenerator, chat_texts, encode_chat
    from sdk.models import resolve_model

    gen = HFGenerator(resolve_model("smollm2-135m", "~/.cache/tuneloop/models"), None, args.batch, args.max_new_tokens)
    tok, chats = gen.tokenizer, prompts(args)
    texts = sorted(chat_texts(tok, chats), key=len)
    totals = {"generate": 0.0, "legacy": 0.0, "now": 0.0}
    for b in range(args.batches):
        batch = texts[b * args.batch:(b + 1) * args.batch]
        enc = encode_chat(tok, batch)
        prompt_len = enc["input_ids"].shape[1]
        start = time.process_time()
        with torch.inference_mode():
            full = gen.model.generate(**enc, do_sample=False, max_new_tokens=args.max_new_tokens,
                                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                                      stopping_criteria=StoppingCriteriaList([FenceStop(tok, prompt_len)]))
        totals["generate"] += time.process_time() - start
        steps = full.shape[1] - prompt_len
        cpu_old, old = replay(lambda ids: legacy_verdicts(tok, prompt_len, ids), prompt_len, full)
        cpu_new, new = replay(FenceStop(tok, prompt_len), prompt_len, full)
        finished_at = [next((s + 1 for s, step in enumerate(old) if step[i]), None) for i in range(full.shape[0])]
        old, new = running(old), running(new)
        if old != new:
            raise SystemExit(f"batch {b}: the criteria disagree on a running row")
        totals["legacy"] += cpu_old
        totals["now"] += cpu_new
        print(f"batch {b}: {steps} steps, rows finished at {finished_at}; criterion CPU legacy {cpu_old:.2f} s, "
              f"now {cpu_new:.2f} s; generate CPU {totals['generate']:.1f} s so far")
    g, old, now = totals["generate"], totals["legacy"], totals["now"]
    print(f"same verdicts on every running row; criterion CPU now/legacy = {now / max(old, 1e-9):.2f} "
          f"({old:.2f} -> {now:.2f} s), legacy criterion = {100 * old / max(g, 1e-9):.1f} % of generate CPU "
          f"({g:.1f} s); load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
