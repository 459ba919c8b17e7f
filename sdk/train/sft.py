"""LoRA SFT through TRL's ``SFTTrainer``.

Data is in TRL's conversational prompt-completion form (``prompt``: messages,
``completion``: one assistant message), so the loss covers only the completion tokens and
their end-of-turn token, whatever the chat template (templates without a
``{% generation %}`` marker included: field case T1). Sources of rows: the train split's
reference solutions (answered as a fenced code block, the format the reward parses) and the
SFT examples of feedback sources (well-rated responses, corrections). Tool-use conversations
(``messages`` rows: expert iteration over agentic change rollouts) are tokenized first with their
tool answers masked (:mod:`sdk.train.tool_rows`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from transformers import TrainerCallback

from sdk.errors import ConfigError
from sdk.sources import SftExample
from sdk.tasks.records import ChangeVerifier, Task, UnitTestVerifier
from sdk.train.common import (
    common_args,
    peft_config,
    progress_callbacks,
    train_and_save,
)
from sdk.train.config import SftConfig
from sdk.train.curriculum import Item, is_default, order_rows
from sdk.train.lengths import (
    check_rows,
    enforce_max_length,
    pack_by_token_budget,
    write_jsonl,
)
from sdk.train.qlora import guards
from sdk.train.result import TrainResult
from sdk.train.tool_rows import token_rows

log = logging.getLogger(__name__)


def answer_text(task: Task, docstrings: str = "keep") -> str:
    """The completion a task's reference stands for: a fenced code block for code tasks, a
    ```diff block for change tasks (the form their prompt asks for). ``docstrings="drop"`` leaves
    out the docstrings of a Python reference's functions and classes (:func:`drop_docstrings`)."""
    ref = (task.reference or "").strip("\n")
    if docstrings == "drop" and isinstance(task.verifier, UnitTestVerifier) and task.verifier.language.value == "python":
        ref = drop_docstrings(ref)
    if isinstance(task.verifier, UnitTestVerifier):
        return f"```{task.verifier.language.value}\n{ref}\n```"
    if isinstance(task.verifier, ChangeVerifier):
        return f"```diff\n{ref}\n```"
    return ref


def drop_docstrings(code: str) -> str:
    """``code`` without the docstrings of its functions and classes (any depth; the module's kept),
    other lines untouched. A body that held only its docstring gets ``pass``. Code that does not
    parse is returned unchanged.

    Why: a pytest source's prompt already shows the target's docstring; trained on references that
    repeat it, the model spends its answer tokens copying it (toolz 1.0.0: 14 of 40 held-out answers
    cut at 160 tokens; 14 of 40 references over 160 tokens with their docstring, 2 without).
    """
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines, cut = code.splitlines(keepends=True), {}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not body:
            continue
        first = body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            if first.lineno == node.lineno or first.end_lineno is None:
                continue  # `def f(): "doc"; return 1` on one line: left as it is
            cut[first.lineno] = (first.end_lineno, None if len(body) > 1 else " " * first.col_offset + "pass\n")
    out, i = [], 1
    while i <= len(lines):
        if i in cut:
            end, stub = cut[i]
            out += [stub] if stub else []
            i = end + 1
            continue
        out.append(lines[i - 1])
        i += 1
    return "".join(out)


def sft_rows(tasks: Sequence[Task], examples: Sequence[SftExample], docstrings: str = "keep") -> list[dict]:
    """Prompt-completion rows: ``{"prompt": [msg...], "completion": [assistant msg]}``.

    Tasks without a reference are skipped; an example whose last message is not the assistant's
    is skipped (connectors guarantee the shape, this is a guard). ``docstrings`` is
    ``sft.reference_docstrings`` (``keep`` or ``drop``: :func:`answer_text`); feedback examples are
    the user's data and kept as they are.
    """
    rows = []
    for task in tasks:
        if task.reference:
            rows.append({"prompt": [m.model_dump() for m in task.prompt],
                         "completion": [{"role": "assistant", "content": answer_text(task, docstrings)}]})
    for ex in examples:
        if ex.messages and ex.messages[-1].role == "assistant":
            rows.append({"prompt": [m.model_dump() for m in ex.messages[:-1]],
                         "completion": [ex.messages[-1].model_dump()]})
    return rows


def sft_items(tasks: Sequence[Task], examples: Sequence[SftExample]) -> list[Item]:
    """Schedule items aligned with :func:`sft_rows` (same filters, same order): domain, measured
    difficulty (tasks only) and length in characters of prompt + target."""
    items = [Item(t.domain, t.difficulty, len(t.prompt[-1].content) + len(t.reference or ""))
             for t in tasks if t.reference]
    items += [Item(ex.domain, None, sum(len(m.content) for m in ex.messages))
              for ex in examples if ex.messages and ex.messages[-1].role == "assistant"]
    return items


class _PackedNotBatchOfOne(logging.Filter):
    """Drops TRL's "batch size of 1 annihilates padding-free" warning, wrong for packed sequences."""

    def filter(self, record: logging.LogRecord) -> bool:
        """False (drop) for that one warning, True for every other record."""
        return "annihilate" not in record.getMessage()


_NOT_BATCH_OF_ONE = _PackedNotBatchOfOne()


def sft_args(cfg: SftConfig, ordered: bool) -> dict:
    """``SFTConfig`` arguments from our :class:`SftConfig` (besides :func:`common_args`).

    ``max_length`` is passed as None: TRL must not truncate, :func:`enforce_max_length` applies
    ``cfg.truncation`` after tokenizing. With ``token_budget`` one packed sequence is one device batch.
    """
    return dict(
        num_train_epochs=cfg.epochs, max_steps=cfg.max_steps, learning_rate=cfg.learning_rate,
        per_device_train_batch_size=1 if cfg.token_budget else cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_length=None,
        padding_free=cfg.padding_free or cfg.token_budget is not None, completion_only_loss=True,
        lr_scheduler_type="cosine", warmup_steps=0.05,
        train_sampling_strategy="sequential" if ordered else "group_by_length" if cfg.group_by_length else "random")


def _usable_rows(rows: list[dict], out_dir: Path) -> list[dict]:
    """The well-formed rows; malformed ones go to ``out_dir/bad_rows.jsonl`` with reasons.

    Raises:
        ConfigError: no well-formed row is left.
    """
    rows, bad = check_rows(rows)
    write_jsonl(out_dir / "bad_rows.jsonl", bad)
    if bad:
        log.warning("SFT: %d malformed rows left out (reasons in %s)", len(bad), out_dir / "bad_rows.jsonl")
    if not rows:
        raise ConfigError("no SFT rows: no train task has a reference and no feedback example was found"
                          + (f" ({len(bad)} malformed rows, see {out_dir / 'bad_rows.jsonl'})" if bad else ""),
                          "add a source with reference solutions (pytest, jsonl) or feedback examples, or turn SFT "
                          "off (--set sft.enabled=false)")
    return rows


def _nothing_fits(cfg: SftConfig, lengths: dict, out_dir: Path) -> ConfigError:
    """The error when the length policy left no row."""
    longest = lengths["longest_prompt"] if cfg.truncation == "truncate" else lengths["longest"]
    what = "prompt alone reaches" if cfg.truncation == "truncate" else "row is longer than"
    return ConfigError(f"every SFT {what} sft.max_length={cfg.max_length} (see {out_dir}/too_long.jsonl)",
                       f"raise sft.max_length (the longest {'prompt' if cfg.truncation == 'truncate' else 'row'} "
                       f"has {longest} tokens)" + ("" if cfg.truncation == "truncate"
                                                   else ", or set sft.truncation: truncate"))


def run_sft(model_path: str, rows: list[dict], cfg: SftConfig, out_dir: Path, seed: int,
            dtype: str = "auto", progress: bool = True, items: Sequence[Item] | None = None,
            callbacks: Sequence[TrainerCallback] = (), load_in_4bit: bool = False,
            adapter_dir: Path | None = None) -> TrainResult:
    """Train a LoRA adapter on ``rows`` (or keep training ``adapter_dir``); save it to ``out_dir/adapter``.

    Resumes from the newest checkpoint under ``out_dir/checkpoints`` when one exists (checkpoints
    every ``cfg.save_steps``). With ``cfg.order`` set and ``items`` (from :func:`sft_items`) given,
    the rows are put in curriculum/mixing order and read sequentially (no shuffling).

    Returns:
        :class:`TrainResult` with tokens trained (TRL's ``num_tokens``), the log history and, in
        ``details``, the length summary.
    Rows longer than ``cfg.max_length`` tokens follow ``cfg.truncation``
    (:mod:`sdk.train.lengths`; the summary is ``details["lengths"]``); ``cfg.token_budget`` packs rows
    into token-budget batches.

    Raises:
        ConfigError: no well-formed row (``rows`` empty or all malformed); ``cfg.truncation`` is ``error`` and a row is too long, or no row fits.
    """
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from sdk.models import load_model

    rows = _usable_rows(rows, out_dir)
    ordered = items is not None and not is_default(cfg.order)
    if ordered:
        rows, _ = order_rows(rows, items, cfg.order, None, seed)
    model, tokenizer = load_model(model_path, dtype=dtype, load_in_4bit=load_in_4bit)
    if "messages" in rows[0]:  # tool-use conversations: pre-tokenized, tool answers masked (sdk.train.tool_rows)
        rows = token_rows(rows, tokenizer)
    start = adapter_dir or cfg.init_adapter  # continue an existing adapter (expert iteration, `tuneloop loop`)
    if start:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(start), is_trainable=True)
    if cfg.token_budget:  # one packed sequence per step is not "batch size 1": drop TRL's warning about it
        logging.getLogger("trl.trainer.sft_trainer").addFilter(_NOT_BATCH_OF_ONE)
    args = SFTConfig(**sft_args(cfg, ordered), **{**common_args(out_dir, seed), "save_steps": cfg.save_steps})
    callbacks = [*guards(model), *callbacks]
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         peft_config=None if start else peft_config(cfg.lora),
                         callbacks=[*progress_callbacks(out_dir, progress), *callbacks])
    # TRL tokenized the rows without truncating (max_length=None): our length policy sees true lengths
    trainer.train_dataset, lengths = enforce_max_length(trainer.train_dataset, cfg.max_length, cfg.truncation, out_dir)
    if not len(trainer.train_dataset):
        raise _nothing_fits(cfg, lengths, out_dir)
    if cfg.token_budget:
        trainer.train_dataset = pack_by_token_budget(trainer.train_dataset, cfg.token_budget)
    history = train_and_save(trainer, out_dir)
    tokens = max((int(h.get("num_tokens", 0)) for h in history), default=0)
    return TrainResult("sft", steps=trainer.state.global_step, rows=len(rows), tokens_trained=tokens,
                       log_history=tuple(history), details={"lengths": lengths})
