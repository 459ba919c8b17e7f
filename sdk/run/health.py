"""Task-set health: will this task set teach, and can its evaluation show anything?

Checked right after the tasks stage builds the set, before any training is paid for. An error
(nothing to train on for an enabled stage, nothing to evaluate) names the stage it blocks: the
pipeline refuses to start that stage (``tuneloop tasks build`` alone still succeeds, so the set can
be inspected with ``tuneloop tasks show``); a warning (too few train or held-out tasks to learn from or to show a gain, more held-out than train
tasks) is printed and kept in ``tasks/counts.json`` under ``health``. Quarantine reasons are summed
and shown with examples and the file that holds them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from sdk.errors import SourceError
from sdk.sandbox.deps import missing_dependency_fix
from sdk.tasks.records import Split, Task

MIN_TRAIN = 8       # fewer train tasks rarely teach a house convention (DESIGN: 50 train tasks gave +4/30)
MIN_HELDOUT = 30    # below this a held-out pass@1 gain of a few tasks cannot be told from noise


@dataclass(frozen=True)
class Finding:
    """One health finding: ``level`` is ``error`` or ``warning``; ``what`` and ``fix`` are sentences;
    ``stage`` is the stage an error blocks (``sft``, ``rl``, ``eval``)."""

    level: str
    what: str
    fix: str
    stage: str = ""

    def as_dict(self) -> dict[str, str]:
        """JSON form for ``counts.json``."""
        return {"level": self.level, "what": self.what, "fix": self.fix, "stage": self.stage}


def check_health(tasks: Sequence[Task], n_examples: int, cfg, fixed: Collection[str] = ()) -> list[Finding]:
    """Findings for a built task set under run config ``cfg`` (pure: no I/O).

    Args:
        tasks: the validated tasks, splits assigned.
        n_examples: SFT examples from feedback sources.
        cfg: the :class:`sdk.config.RunConfig`.
        fixed: ids of the tasks whose split a source or ``sources[].split`` fixed; when it holds them
            all, ``tasks.heldout_fraction`` changes nothing and the fixes name the sources' own
            ``heldout_fraction`` option (``git_history``'s time-honest split) instead.
    """
    by_split = Counter(t.split for t in tasks)
    train = [t for t in tasks if t.split == Split.TRAIN]
    verifiable = sum(t.verifier.kind != "reference" for t in train)
    with_reference = sum(bool(t.reference) for t in train)
    demos = _tools_on(cfg) and cfg.tools.demonstrations.enabled  # tool-call demonstrations (sdk.train.tool_demos)
    with_demo = sum(t.metadata.get("demonstration") is not None for t in train) if demos else 0
    n_train, n_held = by_split[Split.TRAIN], by_split[Split.HELDOUT]
    out: list[Finding] = []
    own = bool(tasks) and all(t.id in fixed for t in tasks)
    knob = "the source's own heldout_fraction option (its split is fixed: tasks.heldout_fraction does not apply)" \
        if own else "tasks.heldout_fraction"
    if cfg.sft.enabled and not (with_reference and cfg.sft.include_train_references) and not (
            n_examples and cfg.sft.include_feedback) and not with_demo:
        out.append(Finding("error", f"SFT has nothing to learn from: {n_train} train tasks ({with_reference} with a "
                           f"reference solution{', 0 with a tool-call demonstration' if demos else ''}) and "
                           f"{n_examples} feedback examples",
                           "add tests whose functions have reference solutions, or a feedback source, or turn SFT "
                           "off (--set sft.enabled=false)", "sft"))
    if cfg.rl.enabled and not verifiable and not _tools_on(cfg):
        out.append(Finding("error", f"GRPO has nothing to train on: none of the {n_train} train tasks has an "
                           "automatic verifier", "add a test-suite source whose split is auto or train, or turn "
                           "GRPO off (--set rl.enabled=false)", "rl"))
    if not any(by_split[Split(s)] for s in cfg.eval.splits):
        out.append(Finding("error", f"nothing to evaluate: no task in the eval splits {list(cfg.eval.splits)}",
                           f"add tests so those splits get tasks, raise {knob}, or list the splits "
                           "that have tasks under eval.splits", "eval"))
    if 0 < n_train < MIN_TRAIN:
        out.append(Finding("warning", f"only {n_train} train task(s): too few to learn from",
                           f"add tests (each tested function becomes a task) or lower {knob}"))
    if 0 < n_held < MIN_HELDOUT and "heldout" in cfg.eval.splits:
        out.append(Finding("warning", f"only {n_held} held-out task(s): each is {100 / n_held:.0f} pp of pass@1, so "
                           "a gain of a few tasks cannot be told from noise", "add tests, or raise "
                           f"{knob} if train tasks are plentiful"))
    if n_held > n_train > 0:
        out.append(Finding("warning", f"more held-out ({n_held}) than train ({n_train}) tasks",
                           f"lower {knob}" + ("" if own else " (e.g. --set tasks.heldout_fraction=0.3)")))
    return out


def _tools_on(cfg) -> bool:
    return cfg.tools is not None and bool(cfg.tools.tools or cfg.tools.factories)


def refuse_stage(stage: str, health: Sequence[dict[str, Any]]) -> None:
    """Refuse to start ``stage`` when the task set's health (``counts.json``) has an error for it.

    Raises:
        SourceError: the task set cannot feed ``stage`` (the message says why, the fix how).
    """
    errors = [f for f in health if f.get("level") == "error" and f.get("stage") == stage]
    if errors:
        raise SourceError(f"the task set cannot feed {stage}: {errors[0]['what']}", errors[0]["fix"])


def quarantine_summary(quarantined: Sequence[Any], examples: int = 3) -> list[dict[str, Any]]:
    """Quarantine reasons summed (by the reason's first clause), most common first, each with up to
    ``examples`` examples (task locator or row, and the full reason's first line) and its fix
    (:func:`group_fix`; empty when none is known)."""
    groups: dict[str, list[Any]] = {}
    for q in quarantined:
        groups.setdefault(q.reason.split(":")[0].strip(), []).append(q)
    out = []
    for reason, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shown = []
        for q in items[:examples]:
            where = q.task.source.locator if q.task is not None else (q.source.locator if q.source else "")
            shown.append({"where": where or "(row)", "reason": q.reason.splitlines()[0][:300]})
        out.append({"reason": reason, "count": len(items), "examples": shown, "fix": group_fix(items)})
    return out


def group_fix(items: Sequence[Any]) -> str:
    """One fix for a quarantine group: a ``fix:`` line its reasons carry, else, where they say a module
    is missing (Python's ``ModuleNotFoundError`` or an ``importorskip`` skip, Node's ``Cannot find
    module``/``ERR_MODULE_NOT_FOUND``, Go's ``no required module provides package``, javac's ``package
    ... does not exist``), the fix for it (:func:`~sdk.sandbox.deps.missing_dependency_fix`); empty
    when neither."""
    for q in items:
        for line in q.reason.splitlines():
            if line.startswith("fix: "):
                return line[5:]
    return missing_dependency_fix("\n".join(q.reason for q in items))


def print_findings(findings: Sequence[Finding], console: Console) -> None:
    """Warnings in yellow and errors in red (with the stage they will stop), each with its fix."""
    for f in findings:
        tag = "[yellow]warning:[/yellow]" if f.level == "warning" else f"[red]error (stops {f.stage}):[/red]"
        console.print(f"  {tag} {escape(f.what)}\n           fix: {escape(f.fix)}")


def print_task_summary(result: dict[str, Any], console: Console) -> None:
    """The ``tasks show`` view: one line per split and domain, quarantine reasons, health, files."""
    for split, domains in (result.get("splits") or {}).items():
        if split == "quarantined":
            continue
        console.print(f"  {split:9} {sum(domains.values()):5}  " + ", ".join(f"{d}: {n}" for d, n in domains.items()))
    console.print(f"  SFT examples {result.get('sft_examples', 0)}, preference pairs {result.get('preference_pairs', 0)}")
    for reason, n in (result.get("quarantine_reasons") or {}).items():
        console.print(f"  quarantined {n:4}  {escape(reason)}")
    for f in result.get("health") or []:
        console.print(f"  [yellow]{f['level']}:[/yellow] {escape(f['what'])} — fix: {escape(f['fix'])}")
    for name, path in (result.get("files") or {}).items():
        console.print(f"  {name:10} {path}")
