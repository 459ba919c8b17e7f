"""A task's prompt exactly as the model sees it (``tuneloop tasks prompt CONFIG TASK``).

The task is found in the built set (``tasks/tasks.jsonl``, then the quarantine) by its id, a unique
prefix of it, or its source locator (``pkg/mod.py::func``). Its messages (system prompt included, as
the tasks stage saved them) are rendered by the model's chat template with the generation prompt, the
text :func:`sdk.generate.chat_texts` gives evaluation and training. The tokenizer is read only from a
model already on this machine (a local folder, or the default model once converted into
``model.cache_dir``): this command never downloads or converts a model. Without one, the raw messages
are printed, and the header says so.
"""

from __future__ import annotations

from pathlib import Path

from sdk.errors import SourceError
from sdk.tasks.records import Task
from sdk.tasks.taskset import TaskSet


def find_task(taskset: TaskSet, key: str) -> tuple[Task, str]:
    """``(task, where)`` for ``key`` (id, unique id prefix, source locator, or its tail: ``pkg/mod.py::func``
    for ``src/pkg/mod.py::func``, or ``func`` alone); ``where`` is ``tasks`` or ``quarantine: REASON``.

    Raises:
        SourceError: no task, or several, match ``key`` (the message lists a few).
    """
    pool = [(t, "tasks") for t in taskset] + [(q.task, f"quarantine: {q.reason.splitlines()[0][:120]}")
                                             for q in taskset.quarantined if q.task is not None]
    tail = ("/" + key.lstrip("/")) if "::" in key else "::" + key
    for match in (lambda t: t.id == key, lambda t: t.source.locator == key, lambda t: t.id.startswith(key),
                  lambda t: t.source.locator.endswith(tail)):  # src/ layout's import path, or a bare name
        found = [(t, w) for t, w in pool if match(t)]
        if len({t.id for t, _ in found}) == 1:
            return found[0]
        if found:
            names = ", ".join(f"{t.id} ({t.source.locator})" for t, _ in found[:5])
            raise SourceError(f"{len(found)} tasks match {key!r}: {names}", "give more of the task id or locator")
    _refuse_quarantined(taskset, key, tail)
    raise SourceError(f"no task matches {key!r} in the task set",
                      "give a task id (`id` in tasks/tasks.jsonl), a unique prefix of it, or a locator "
                      "such as pkg/mod.py::func (or its function name alone)")


def _refuse_quarantined(taskset: TaskSet, key: str, tail: str) -> None:
    """Raise for ``key`` naming a function quarantined before it became a task (no covering tests: no
    prompt was ever built), with its reason and the reason's own ``fix:`` line; return when none matches.

    Raises:
        SourceError: ``"'KEY' (pkg/mod.py::func) was quarantined before a prompt was built: REASON"``.
    """
    for q in taskset.quarantined:
        locator = q.source.locator if q.task is None and q.source is not None else ""
        if locator and (locator == key or locator.endswith(tail)):
            reason, _, fix = q.reason.partition("\nfix: ")
            raise SourceError(f"{key!r} ({locator}) was quarantined before a prompt was built: {reason[:300]}",
                              fix or "see its reason in tasks/tasks.quarantine.jsonl")


def local_tokenizer(model_name: str, cache_dir: str):
    """The model's tokenizer when the model is already on this machine, else None (never downloads)."""
    import os

    from sdk.models import DEFAULT_MODEL, prepare_tokenizer

    cache = Path(os.path.expanduser(cache_dir))
    path = cache / "smollm2-135m-instruct" if model_name == DEFAULT_MODEL else Path(os.path.expanduser(model_name))
    if not (path / "tokenizer_config.json").is_file() and not (path / "tokenizer.json").is_file():
        return None
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError):
        return None
    prepare_tokenizer(tok)
    return tok


def render_prompt(task: Task, tokenizer) -> str:
    """The text the model is given: the chat template's rendering with the generation prompt, or (no
    tokenizer) each message under a ``--- role ---`` line."""
    messages = [m.model_dump(mode="json") for m in task.prompt]
    if tokenizer is not None:
        from sdk.generate import chat_texts

        return chat_texts(tokenizer, [messages])[0]
    return "\n".join(f"--- {m['role']} ---\n{m['content']}" for m in messages)


def show_prompt(taskset: TaskSet, key: str, model_name: str, cache_dir: str, raw: bool = False) -> dict:
    """``{"id", "where", "locator", "rendered_by", "text"}`` for the task ``key`` (see the module docstring)."""
    task, where = find_task(taskset, key)
    tok = None if raw else local_tokenizer(model_name, cache_dir)
    how = f"the chat template of {model_name}" if tok is not None else (
        "raw messages (--raw)" if raw else f"raw messages ({model_name} is not on this machine yet; "
        "its chat template is applied once `tuneloop run` has fetched it)")
    return {"id": task.id, "where": where, "locator": task.source.locator, "rendered_by": how,
            "text": render_prompt(task, tok)}


__all__ = ["find_task", "local_tokenizer", "render_prompt", "show_prompt"]
