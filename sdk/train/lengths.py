"""Row lengths for SFT: an explicit policy for rows longer than ``max_length``, and token-budget packing.

TRL truncates over-long rows silently from the end, which for prompt-completion rows cuts the
completion: the model learns answers that stop mid-code. tuneloop tokenizes first (TRL's own
tokenization, so lengths are exact), then applies ``sft.truncation``:

* ``drop`` (default): the row is left out and recorded in ``sft/too_long.jsonl`` with its length;
* ``truncate``: keep the first ``max_length`` tokens (TRL's ``keep_start``); a row whose completion
  is cut away entirely carries no trainable token and is dropped with that reason;
* ``error``: stop before training with the offending rows and how to fix them.

Token-budget batches: with ``sft.token_budget`` set, the rows are packed best-fit-decreasing into
sequences of at most that many tokens (TRL's ``pack_dataset(strategy="bfd")``), one packed sequence
per device step, so every step trains on about the same number of tokens whatever the row lengths.
Packed and padding-free batches carry position ids that restart at each row and no attention mask;
transformers then builds a block-diagonal causal mask (``find_packed_sequence_indices``) for SDPA and
eager attention as well as FlashAttention, so rows never attend to each other (tested on CPU in
``tests/train/test_sft_lengths.py``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdk.errors import ConfigError

log = logging.getLogger(__name__)


def length_policy(lengths: Sequence[int], trainable: Sequence[int], max_length: int,
                  policy: str) -> tuple[list[int], list[dict[str, Any]]]:
    """Which rows to keep under ``policy``, and a record for each row that was over ``max_length``.

    Args:
        lengths: tokens per row (prompt + completion), one per row.
        trainable: index of the first trainable (completion) token per row; ``len`` when none.
        max_length: the most tokens a row may have, > 0.
        policy: ``drop``, ``truncate`` or ``error``.
    Returns:
        ``(kept row indices in order, [{"row", "tokens", "max_length", "action"}, ...])``; ``action``
        is ``dropped``, ``truncated`` or ``dropped: completion cut entirely``.
    Raises:
        ConfigError: ``policy`` is ``error`` and some row is too long (message names up to 5 rows and
            the longest length), or ``policy`` is unknown.
    """
    if policy not in ("drop", "truncate", "error"):
        raise ConfigError(f"unknown sft.truncation {policy!r}", "use drop, truncate or error")
    kept, records = [], []
    for i, (n, first) in enumerate(zip(lengths, trainable)):
        if n <= max_length:
            kept.append(i)
            continue
        action = "dropped"
        if policy == "truncate" and first < max_length:
            kept.append(i)
            action = "truncated"
        elif policy == "truncate":
            action = "dropped: completion cut entirely"
        records.append({"row": i, "tokens": n, "max_length": max_length, "action": action})
    if policy == "error" and records:
        rows = ", ".join(f"row {r['row']} ({r['tokens']} tokens)" for r in records[:5])
        raise ConfigError(f"{len(records)} SFT rows are longer than sft.max_length={max_length}: {rows}"
                          + (" ..." if len(records) > 5 else ""),
                          f"raise sft.max_length to {max(r['tokens'] for r in records)}, or set "
                          "sft.truncation: drop (leave them out) or truncate (keep their start)")
    return kept, records


def enforce_max_length(dataset, max_length: int, policy: str, out_dir: Path | None = None):
    """Apply :func:`length_policy` to a tokenized SFT dataset (TRL's ``input_ids`` / ``labels`` columns).

    Rows over ``max_length`` are recorded in ``out_dir/too_long.jsonl`` (one JSON object per row)
    and counted in the log. Row order is preserved.

    Returns:
        ``(dataset, summary)``; summary is ``{"policy", "max_length", "rows_in", "rows_out",
        "dropped", "truncated", "longest", "longest_prompt"}`` (lengths in tokens).
    Raises:
        ConfigError: see :func:`length_policy`.
    """
    lengths = [len(ids) for ids in dataset["input_ids"]]
    firsts = [next((j for j, lab in enumerate(labels) if lab != -100), len(labels)) for labels in dataset["labels"]]
    kept, records = length_policy(lengths, firsts, max_length, policy)
    if "prompt" in dataset.column_names:  # which row: the start of its last prompt message
        for r in records:
            prompt = dataset[r["row"]]["prompt"]
            r["prompt_start"] = str(prompt[-1]["content"] if isinstance(prompt, list) and prompt else prompt)[:120]
    if out_dir is not None:
        write_jsonl(out_dir / "too_long.jsonl", records)
    dropped = sum(1 for r in records if r["action"] != "truncated")
    truncated = len(records) - dropped
    if records:
        log.warning("SFT: %d of %d rows are longer than sft.max_length=%d: %d dropped, %d truncated (see %s)%s",
                    len(records), len(lengths), max_length, dropped, truncated,
                    out_dir / "too_long.jsonl" if out_dir else "the stage summary",
                    f"; fix: to train on them, --set sft.max_length={max(lengths)} (the longest row; costs memory) "
                    "or write it under sft: in the config" if dropped else "")
    if len(kept) < len(lengths):
        dataset = dataset.select(kept)
    if truncated:
        cut = {"input_ids", "labels"} & set(dataset.column_names)
        dataset = dataset.map(lambda row: {c: row[c][:max_length] for c in cut})
    summary = {"policy": policy, "max_length": max_length, "rows_in": len(lengths), "rows_out": len(kept),
               "dropped": dropped, "truncated": truncated, "longest": max(lengths, default=0),
               "longest_prompt": max(firsts, default=0)}
    return dataset, summary


def write_jsonl(path: Path, records: Sequence[dict]) -> None:
    """Write ``records`` one JSON object per line; with none, remove a previous run's file (no stale lists)."""
    if not records:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def check_rows(rows: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """Split SFT rows into well-formed ones and quarantined ones with a reason.

    A row needs ``prompt``: a non-empty list of ``{"role", "content"}`` messages, and ``completion``:
    a list of one or more messages whose last is the assistant's with non-blank content; or, for a
    tool-use conversation, ``messages`` (:func:`sdk.train.tool_rows.conversation_problem`).

    Returns:
        ``(good rows in order, [{"row": index, "reason": str}, ...])``.
    """
    good, bad = [], []
    for i, row in enumerate(rows):
        reason = _row_problem(row)
        if reason:
            bad.append({"row": i, "reason": reason})
        else:
            good.append(row)
    return good, bad


def _row_problem(row: object) -> str | None:
    if not isinstance(row, dict):
        return f"not a mapping ({type(row).__name__})"
    if "messages" in row:
        from sdk.train.tool_rows import conversation_problem

        return conversation_problem(row)
    for key in ("prompt", "completion"):
        msgs = row.get(key)
        if not isinstance(msgs, list) or not msgs:
            return f"`{key}` must be a non-empty list of chat messages, got {msgs!r:.60}"
        if not all(isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") for m in msgs):
            return f"`{key}` has a message without a role or string content"
    last = row["completion"][-1]
    if last["role"] != "assistant" or not last["content"].strip():
        return "the completion's last message must be the assistant's, with non-blank content"
    return None


def pack_by_token_budget(dataset, token_budget: int):
    """Pack tokenized rows best-fit-decreasing into sequences of at most ``token_budget`` tokens.

    Every row must already fit (:func:`enforce_max_length` with ``max_length <= token_budget``), so
    nothing is cut. Uses TRL's ``pack_dataset(strategy="bfd")``, which adds the ``seq_lengths``
    column the padding-free collator turns into restarting position ids.

    Returns:
        the packed dataset (fewer, longer rows; row order is by size, not the input order).
    """
    from trl import pack_dataset

    return pack_dataset(dataset.select_columns(["input_ids", "labels"]), token_budget, "bfd")
