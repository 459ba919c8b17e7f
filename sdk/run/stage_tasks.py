"""The tasks stage: read every source, split, validate references in the sandbox, save the task set.

Writes ``tasks/tasks.jsonl`` (+ quarantine), ``tasks/sft_examples.jsonl``,
``tasks/preference_pairs.jsonl`` and ``tasks/counts.json`` (see :mod:`sdk.run.layout`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from rich.markup import escape

from sdk.errors import ConfigError, SourceError
from sdk.jsonl import write_json, write_jsonl
from sdk.run.bookkeeping import StageStats
from sdk.run.context import StageContext
from sdk.run.health import check_health, print_findings, quarantine_summary
from sdk.sources import SftExample, resolve_source
from sdk.tasks.records import Message, Split, Task
from sdk.tasks.split import assign_splits
from sdk.tasks.strength import check_strength, count_mutants
from sdk.tasks.taskset import TaskSet
from sdk.tasks.validate import validate_tasks


def with_system(messages: tuple[Message, ...], system: str) -> tuple[Message, ...]:
    """``messages`` with ``system`` prepended, unless it is empty or a system message leads already."""
    if not system or (messages and messages[0].role == "system"):
        return messages
    return (Message(role="system", content=system), *messages)


def check_sources(cfg) -> None:
    """Resolve every source type and validate its options, reading nothing.

    Raises:
        ConfigError: an unknown source type or invalid connector options (names the source).
    """
    for i, src in enumerate(cfg.sources):
        try:
            resolve_source(src.type)(src.options, cfg.base_dir, src.domain)
        except ConfigError as exc:
            raise ConfigError(f"sources[{i}] ({src.type}): {exc.what}", exc.fix) from exc


class _Collected:
    """What the sources gave, accumulated source by source."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.fixed: dict[str, Split] = {}
        self.examples: list[SftExample] = []
        self.pairs: list = []
        self.quarantined: list = []
        self.counts: dict[str, dict] = {}
        self.labels: dict[str, str] = {}  # task id -> the counts key of its source


def _read_sources(ctx: StageContext) -> _Collected:
    """Read each source in order; system prompt added, source limits and fixed splits applied."""
    cfg, got = ctx.cfg, _Collected()
    system = cfg.tasks.system_prompt
    for i, src in enumerate(cfg.sources):
        label = f"{src.type}:{src.domain}"
        with ctx.console.status(f"reading source {label}"):
            result = resolve_source(src.type)(src.options, cfg.base_dir, src.domain).read()
        tasks = sorted(result.tasks, key=lambda t: t.id)[: src.limit] if src.limit else result.tasks
        tasks = [t.with_(prompt=with_system(t.prompt, system)) for t in tasks]
        if src.split != "auto":
            got.fixed.update({t.id: Split(src.split) for t in tasks})
        elif result.splits_fixed:  # the source's own split (git_history: by time)
            got.fixed.update({t.id: t.split for t in tasks})
        got.tasks += tasks
        got.labels.update({t.id: f"{i}:{label}" for t in tasks})
        got.examples += [e.model_copy(update={"messages": with_system(e.messages, system)})
                         for e in result.sft_examples]
        got.pairs += result.preference_pairs
        got.quarantined += result.quarantined
        got.counts[f"{i}:{label}"] = result.counts
        ctx.console.print(f"  {label} (as read; reference validation below may quarantine more): "
                          f"{counts_line(result.counts)}", highlight=False)
    return got


def counts_line(counts: dict) -> str:
    """A source's counts for people: ``tasks 11, quarantined 3, sft examples 0, tests collected 14, ...`` (the
    headline counts first, then the rest in the source's order; underscores read as spaces), not a raw dict."""
    first = [k for k in ("tasks", "quarantined", "sft_examples") if k in counts]
    keys = first + [k for k in counts if k not in first]
    return ", ".join(f"{k.replace('_', ' ')} {counts[k]}" for k in keys)


def _all_quarantined(quarantined: list) -> SourceError:
    """Every task a source gave was quarantined (and no SFT example came): nothing to train on."""
    reasons = Counter(q.reason.split(":")[0] for q in quarantined).most_common(3)
    why = ", ".join(f"{n} {r}" for r, n in reasons)
    return SourceError(f"every one of the {len(quarantined)} tasks was quarantined ({why}); the task set is empty",
                       "read the reasons and their fixes above (all in tasks/tasks.quarantine.jsonl; `tuneloop tasks "
                       "show CONFIG` sums them), fix the cause, then build again")


def _nothing_read(quarantined: list, counts: dict[str, dict] | None = None) -> SourceError:
    """Nothing came from any source; a pytest source that skipped methods (``methods: false``, the
    default) names the option that turns them into tasks (a library of classes gives no task otherwise)."""
    reasons = Counter(q.reason for q in quarantined).most_common(3)
    why = "".join(f"\n  - {n} quarantined: {r[:300]}" for r, n in reasons)
    skipped = {k: c["methods_skipped"] for k, c in (counts or {}).items() if c.get("methods_skipped")}
    methods = "".join(f"\n  - {k.split(':', 1)[1]}: {n} method(s) skipped (`methods: false`, the default)"
                      for k, n in skipped.items())
    fix = ("set `methods: true` in the pytest source's options (e.g. --set sources."
           f"{next(iter(skipped)).split(':')[0]}.options.methods=true) so tested methods become tasks") if skipped else (
        "check each source's path/URL and options (e.g. `fields:` of a jsonl source, `rating:` of a feedback "
        "source); see the counts printed above")
    return SourceError("the sources produced no tasks and no SFT examples" + (f"; top reasons:{why}" if why else "")
                       + methods, fix)


def data_version(taskset: TaskSet, examples: list[SftExample], pairs: list) -> str:
    """Content hash (16 hex) of the task set, SFT examples and preference pairs together."""
    body = [taskset.version, *sorted(e.model_dump_json() for e in examples), *sorted(x.model_dump_json() for x in pairs)]
    return hashlib.sha256("\n".join(body).encode()).hexdigest()[:16]


def _check_strength(ctx: StageContext, tasks: list[Task], stubs_failed: dict[str, str]) -> tuple[list[Task], list]:
    """Mutants of every validated reference through the run's sandbox (see :mod:`sdk.tasks.strength`);
    the stubs validation already saw fail are not run again."""
    cfg = ctx.cfg.tasks.mutants
    total = count_mutants(tasks, cfg.max_reference_mutants, stubs_failed)
    with ctx.bar("checking verifier strength (mutants)", total) as bar:
        return check_strength(tasks, ctx.need_sandbox(), ctx.cfg.sandbox.limits, cfg.max_reference_mutants,
                              cfg.weak_if, progress=lambda n: bar.advance(bar.task_ids[0], n),
                              known_killed=stubs_failed)


def strength_summary(tasks: list[Task], quarantined: list, labels: dict[str, str]) -> dict[str, dict]:
    """Per source (counts key): tasks scored, mutants killed / run, the score and ``weak_tests``.

    Returns ``{source: {"scored", "killed", "total", "score", "weak_tests", "skipped"}}`` for the
    sources that had unit-test tasks; ``score`` is killed / total over the source's mutants (None
    when none ran).
    """
    out: dict[str, dict] = {}
    weak = [q.task for q in quarantined if q.reason.startswith("weak_tests") and q.task is not None]
    for task in [*tasks, *weak]:
        info = task.metadata.get("mutants")
        if not isinstance(info, dict) or task.id not in labels:
            continue
        row = out.setdefault(labels[task.id], {"scored": 0, "killed": 0, "total": 0, "weak_tests": 0, "skipped": 0})
        if "skipped" in info:
            row["skipped"] += 1
            continue
        row["scored"] += 1
        row["killed"] += info["killed"]
        row["total"] += info["total"]
    for task in weak:
        if task.id in labels:
            out[labels[task.id]]["weak_tests"] += 1
    for row in out.values():
        row["score"] = round(row["killed"] / row["total"], 4) if row["total"] else None
    return out


def brief_reason(reason: str, width: int = 160) -> str:
    """``reason`` on one line of at most about ``width`` characters that keeps its cause.

    A long reason (a pytest collection error, a traceback) keeps its start and its last line naming an
    error (``ModuleNotFoundError: No module named 'coerce'``), joined by `` … ``: cutting at ``width``
    alone hid the cause, which only ``tasks.quarantine.jsonl`` held. A long one-line reason keeps its
    start and its last ``SomeError: ...`` (a ``reference_fails`` reason's first line ends with the
    first failing test's cause); with no error named it is cut at ``width`` (it once came out twice).
    """
    flat = " ".join(reason.split())
    if len(flat) <= width:
        return flat
    lines = [ln.strip() for ln in reason.splitlines() if ln.strip()]
    if len(lines) > 1:
        cause = next((ln for ln in reversed(lines[1:]) if "Error" in ln or "Exception" in ln), lines[-1])
    else:
        found = list(_ERROR_NAME.finditer(flat))
        cause = flat[found[-1].start():] if found and found[-1].start() > width // 4 else ""
        if not cause:
            return flat[: width - 1] + "…"
    cause = " ".join(cause.split())[: width * 2 // 3]
    head = flat[: max(width - len(cause) - 3, 20)]
    return head if cause in head else f"{head} … {cause}"


_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")


def _print_built(ctx: StageContext, taskset: TaskSet, summary: dict, findings) -> None:
    """Splits, quarantine reasons with examples, health warnings and the files written."""
    if not len(taskset):
        ctx.console.print("  task set: empty (no validated task)")
    else:
        ctx.console.print(f"  task set {taskset.version}: " + ", ".join(
            f"{split} {sum(d.values())}" for split, d in summary["splits"].items() if split != "quarantined"))
    for group in summary["quarantine"]:
        ctx.console.print(f"  quarantined {group['count']:4}  {escape(group['reason'])}")
        for ex in group["examples"]:
            ctx.console.print(escape(f"       e.g. {ex['where']}: {brief_reason(ex['reason'])}"))
        if group.get("fix"):
            ctx.console.print(escape(f"       fix: {group['fix']}"))
    print_findings(findings, ctx.console)
    layout = ctx.layout
    ctx.console.print(f"  wrote {layout.tasks_jsonl}, {layout.quarantine_jsonl.name}, {layout.sft_examples_jsonl.name}, "
                      f"{layout.preference_pairs_jsonl.name}, {layout.counts_json.name}")


def stage_tasks(ctx: StageContext) -> StageStats:
    """Read every source, split, validate references in the sandbox, save the task set.

    Raises:
        SourceError: the sources gave no task and no SFT example, or every task was quarantined and no
            SFT example came (names the top quarantine reasons; the files are written first).
            A task set that cannot feed a later stage is recorded (``counts.json`` ``health``) and
            refused when that stage starts (:mod:`sdk.run.health`).
    """
    cfg, layout = ctx.cfg, ctx.layout
    got = _read_sources(ctx)
    if not got.tasks and not got.examples:
        raise _nothing_read(got.quarantined, got.counts)
    tasks, dups = assign_splits(got.tasks, cfg.tasks.heldout_fraction, cfg.tasks.ood_domains, cfg.seed, got.fixed)
    quarantined = got.quarantined + dups
    if cfg.tasks.validate_references and tasks:
        stubs_failed: dict[str, str] = {}
        with ctx.bar("validating references", len(tasks) * 2) as bar:
            tasks, bad = validate_tasks(tasks, ctx.need_sandbox(), cfg.sandbox.limits,
                                        progress=lambda n: bar.advance(bar.task_ids[0], n), stubs_failed=stubs_failed)
        quarantined += bad
        if cfg.tasks.mutants.enabled and tasks:
            tasks, weak = _check_strength(ctx, tasks, stubs_failed)
            quarantined += weak
    taskset = TaskSet(tasks, quarantined)
    findings = check_health(tasks, len(got.examples), cfg, fixed=set(got.fixed))
    taskset.save(layout.tasks_jsonl)
    write_jsonl(layout.sft_examples_jsonl, [e.model_dump(mode="json") for e in got.examples])
    write_jsonl(layout.preference_pairs_jsonl, [x.model_dump(mode="json") for x in got.pairs])
    summary = {"sources": got.counts, "splits": taskset.counts(), "version": taskset.version if len(taskset) else None,
               "data_version": data_version(taskset, got.examples, got.pairs),
               "sft_examples": len(got.examples), "preference_pairs": len(got.pairs),
               "quarantine_reasons": dict(Counter(q.reason.split(":")[0] for q in quarantined)),
               "strength": strength_summary(tasks, quarantined, got.labels),
               "quarantine": quarantine_summary(quarantined), "health": [f.as_dict() for f in findings]}
    write_json(layout.counts_json, summary)
    _print_built(ctx, taskset, summary, findings)
    if not len(taskset) and not got.examples:  # files written first, so `tasks show` can explain it
        raise _all_quarantined(quarantined)
    return StageStats("tasks", extra={"tasks": len(taskset), "quarantined": len(quarantined),
                                      "sft_examples": len(got.examples)})
