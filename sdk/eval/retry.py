"""One retry with execution feedback: every failed sample gets a second attempt that sees the
failing tests' output, and the row records whether it passed on its first or second attempt.

This is the self-correction loop of Chen et al. 2023, "Teaching Large Language Models to
Self-Debug" (arXiv:2304.05128) and of Reflexion (Shinn et al. 2023, arXiv:2303.11366), cut to one
round. The feedback comes from the *visible* tests only (the caller's ``feedback`` callable runs
them); hidden tests still judge the second attempt, so a retry cannot learn the hidden tests.
Reported apart from pass@1 as "pass@1 after one retry" (:func:`sdk.eval.checkpoints.retry_section`).
No model and no sandbox here: ``generate``, ``score`` and ``feedback`` are callables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sdk.eval.records import EvalRow
from sdk.eval.run import Generate, Score, is_pass
from sdk.tasks.records import Task

RETRY_PROMPT = ("Running the tests on your code gave:\n\n{feedback}\n\nFix the code. "
                "Reply with one ```python code block.")
Feedback = Callable[[list[Task], list[str]], list[str]]


def retry_prompt(task: Task, completion: str, feedback: str) -> list[dict]:
    """The second attempt's conversation: the task, the first answer, the test output."""
    return [*(m.model_dump(mode="json") for m in task.prompt), {"role": "assistant", "content": completion},
            {"role": "user", "content": RETRY_PROMPT.format(feedback=feedback.strip() or "(no output)")}]


def retry_with_feedback(tasks: Sequence[Task], rows: Sequence[EvalRow], generate: Generate, score: Score,
                        feedback: Feedback, batch_size: int = 8) -> list[EvalRow]:
    """``rows`` with :attr:`EvalRow.retry` filled: per sample, passed first time or on the retry.

    Args:
        tasks: the evaluated tasks (rows are matched by id).
        rows: one model's rows from :func:`sdk.eval.run.evaluate`.
        generate: ``(conversations, 1) -> [[(text, n_tokens, ...)]]`` for the second attempts.
        score: the same scorer as the first attempts.
        feedback: ``(tasks, completions) -> texts``, the failing visible tests' output per sample.
        batch_size: conversations per ``generate`` call.
    Returns:
        New rows (same order); unjudged samples keep ``False`` in ``retry``. ``gen_tokens`` grows
        by the retry's tokens.
    """
    by_id = {t.id: t for t in tasks}
    todo = [(i, j) for i, row in enumerate(rows) if row.task_id in by_id
            for j, (r, p) in enumerate(zip(row.rewards, row.passed)) if r is not None and not p]
    firsts = [rows[i].completions[j] for i, j in todo]
    todo_tasks = [by_id[rows[i].task_id] for i, _ in todo]
    second: dict[tuple[int, int], bool] = {}
    extra_tokens: dict[int, int] = {}
    for start in range(0, len(todo), batch_size):
        part, part_tasks, part_first = (todo[start:start + batch_size], todo_tasks[start:start + batch_size],
                                        firsts[start:start + batch_size])
        notes = feedback(part_tasks, part_first)
        outs = generate([retry_prompt(t, c, f) for t, c, f in zip(part_tasks, part_first, notes)], 1)
        results = score(part_tasks, [o[0][0] for o in outs])
        for (i, j), out, res in zip(part, outs, results):
            second[(i, j)] = res is not None and is_pass(res)
            extra_tokens[i] = extra_tokens.get(i, 0) + int(out[0][1])
    updated = []
    for i, row in enumerate(rows):
        retry = tuple(bool(p) or second.get((i, j), False) for j, p in enumerate(row.passed))
        updated.append(row.model_copy(update={"retry": retry, "gen_tokens": row.gen_tokens + extra_tokens.get(i, 0)}))
    return updated
