"""The schedule comparison's pure parts: config rules, the arm config, the task sample, the verdict
on hand-made curves, and the report section and HTML for two arms."""

from __future__ import annotations

import math

import pytest

from sdk.config import RlConfig, parse_config
from sdk.errors import ConfigError
from sdk.eval.schedule import last_step_difference, schedule_section, verdict
from sdk.train.compare import arm_config, arm_label, monitor_settings, probe_every


def arm(stage: str, label: str, scores_by_step: dict[int, list[float | None]], **extra) -> dict:
    """A curve record as ``sdk.train.compare.arm_record`` writes it, from per-task scores per step."""
    evaluations = []
    for step, scores in scores_by_step.items():
        judged = [s for s in scores if s is not None]
        evaluations.append({"step": step, "overall": sum(judged) / len(judged), "by_domain": {"acme": 0.0},
                            "tasks": {f"t{i}": s for i, s in enumerate(scores)}})
    return {"stage": stage, "label": label, "settings": {}, "every": 4, "evaluations": evaluations,
            "steps_trained": max(scores_by_step), "max_steps": max(scores_by_step), "rolled_back_to": None,
            "stopped_at": None, **extra}


def test_probe_interval_and_rollback_rules():
    plain = RlConfig()
    assert monitor_settings(plain) is None, "no probes unless asked for"
    on = RlConfig(compare={"enabled": True})
    assert probe_every(on) == 4 and monitor_settings(on) == (4, math.inf, True), "observe only, last step probed"
    watched = RlConfig(compare={"enabled": True}, heldout={"every": 2, "max_drop": 0.3})
    assert monitor_settings(watched) == (2, 0.3, True), "the user's rollback applies to both arms"
    assert monitor_settings(RlConfig(heldout={"every": 3})) == (3, 0.2, False), "unchanged without compare"
    assert monitor_settings(RlConfig(enabled=False, compare={"enabled": True})) is None


def test_mismatched_probe_intervals_are_a_config_error():
    raw = {"sources": [{"type": "pytest", "domain": "x"}],
           "rl": {"heldout": {"every": 3}, "compare": {"enabled": True, "every": 2}}}
    with pytest.raises(ConfigError, match="both arms must be probed at the same steps"):
        parse_config(raw)
    with pytest.raises(ConfigError, match="did you mean `every`"):
        parse_config({**raw, "rl": {"compare": {"evry": 2}}})


def test_the_comparison_arm_differs_only_in_order_and_difficulty():
    rc = RlConfig(max_steps=7, learning_rate=1e-5, compare={"enabled": True})
    alt = arm_config(rc)
    assert alt.order.curriculum == "easy_to_hard" and alt.difficulty.enabled and not alt.compare.enabled
    same = {k for k in RlConfig.model_fields if k not in ("order", "difficulty", "compare")}
    assert all(getattr(alt, k) == getattr(rc, k) for k in same)
    assert arm_label(rc) == "plain" and arm_label(alt) == "easy_to_hard curriculum + difficulty filter"


def test_difficulty_sample_is_seeded_and_independent_of_input_order():
    from sdk.tasks.records import AnswerVerifier, Message, Source, Task
    from sdk.train.difficulty import sample_tasks

    tasks = [Task(domain="d", prompt=(Message(role="user", content=f"q{i}"),), source=Source(connector="t"),
                  verifier=AnswerVerifier(expected="x")) for i in range(10)]
    picked, rest = sample_tasks(tasks, 4, seed=1)
    assert len(picked) == 4 and len(rest) == 6 and {t.id for t in picked} | {t.id for t in rest} == {t.id for t in tasks}
    again, _ = sample_tasks(list(reversed(tasks)), 4, seed=1)
    assert {t.id for t in again} == {t.id for t in picked}
    assert sample_tasks(tasks, None, 0) == (tasks, []) and sample_tasks(tasks, 10, 0) == (tasks, [])


def test_verdict_ahead_when_every_probe_task_improves():
    main = arm("rl", "plain", {0: [0.2, 0.2, 0.2, 0.2], 4: [0.2, 0.3, 0.2, 0.1], 8: [0.2, 0.2, 0.3, 0.1]})
    alt = arm("rl_compare", "curriculum", {0: [0.2, 0.2, 0.2, 0.2], 4: [0.3, 0.3, 0.3, 0.3], 8: [0.6, 0.5, 0.7, 0.4]})
    last = last_step_difference(main, alt)
    assert last["step"] == 8 and last["ahead"] == 4 and last["behind"] == 0
    text = verdict(main, alt, last)
    assert text.startswith("curriculum ahead of plain by 0.350 held-out reward at step 8")
    assert "4 probe tasks, 8 GRPO steps" in text


def test_verdict_behind_and_no_difference():
    main = arm("rl", "plain", {0: [0.5] * 4, 8: [0.6, 0.7, 0.6, 0.8]})
    worse = arm("rl_compare", "curriculum", {0: [0.5] * 4, 8: [0.1, 0.2, 0.0, 0.3]})
    assert verdict(main, worse, last_step_difference(main, worse)).startswith(
        "curriculum behind plain by 0.525 held-out reward at step 8")
    mixed = arm("rl_compare", "curriculum", {0: [0.5] * 4, 8: [0.7, 0.6, 0.6, 0.7]})
    text = verdict(main, mixed, last_step_difference(main, mixed))
    assert text.startswith("no clear difference at this scale: curriculum minus plain = -0.025")
    assert "95% CI" in text and "4 probe tasks, 8 GRPO steps" in text


def test_verdict_uses_the_last_common_step_and_names_an_early_stop():
    main = arm("rl", "plain", {0: [0.5, 0.5], 4: [0.9, 0.9]}, stopped_at=4, rolled_back_to=0)
    main["steps_trained"] = 4
    alt = arm("rl_compare", "curriculum", {0: [0.5, 0.5], 4: [0.5, 0.5], 8: [1.0, 1.0]})
    last = last_step_difference(main, alt)
    assert last["step"] == 4, "never a step only one arm reached"
    text = verdict(main, alt, last)
    assert "at step 4" in text and "plain stopped at step 4 (held-out rollback)" in text


def test_unjudged_probe_tasks_and_skipped_arms():
    main = arm("rl", "plain", {0: [0.5, None, 0.5], 4: [0.5, 1.0, None]})
    alt = arm("rl_compare", "curriculum", {0: [0.5, 0.5, 0.5], 4: [0.5, 0.0, 0.5]})
    assert last_step_difference(main, alt)["n_tasks"] == 2, "only tasks judged in both arms are paired"
    skipped = {"stage": "rl_compare", "label": "curriculum", "skipped": "nothing to train on", "evaluations": []}
    section = schedule_section(main, skipped)
    assert section["verdict"] == "no comparison: the curriculum arm did not run (nothing to train on)"
    assert section["last_step"] is None and section["arms"]["compare"]["final"] is None


def test_section_notes_a_step_zero_mismatch_and_renders_both_arms(tmp_path):
    from sdk.eval.html import _schedule

    main = arm("rl", "plain", {0: [0.5, 0.5], 4: [0.5, 0.6]})
    alt = arm("rl_compare", "easy_to_hard <b>", {0: [0.4, 0.5], 4: [0.7, 0.6]})
    section = schedule_section(main, alt, {"wall_s": 123.4, "cpu_s": 200.0})
    assert section["steps"] == [0, 4] and "differ already at step 0" in section["notes"][0]
    assert section["arms"]["main"]["final"] == {"step": 4, "overall": 0.55, "by_domain": {"acme": 0.0}}
    assert "tasks" not in section["arms"]["compare"]["evaluations"][0], "per-task scores stay in the arm files"
    page = _schedule({"schedule_comparison": section})
    assert '<section id="schedule-comparison">' in page and 'data-plot="schedule-comparison"' in page
    assert "<td>rl</td><td>plain</td>" in page and "<td>rl_compare</td>" in page
    assert "easy_to_hard &lt;b&gt;" in page and "<b>" not in page, "labels are escaped"
    assert "+0.100" in page and "123 s wall" in page
    assert _schedule({"schedule_comparison": None}) == ""


def test_monitor_final_probe_ends_the_curve_at_the_last_step():
    from types import SimpleNamespace

    import torch
    from transformers import TrainerControl

    from sdk.train.monitor import HeldoutMonitor

    model = torch.nn.Linear(2, 2)
    scores = iter([0.5, 0.1, 0.2])
    monitor = HeldoutMonitor(lambda m, t: {"acme": next(scores)}, every=2, threshold=math.inf, final=True)
    state, control = SimpleNamespace(global_step=0), TrainerControl()
    monitor.on_train_begin(None, state, control, model=model)
    for step in (1, 2, 3):
        state.global_step = step
        monitor.on_step_end(None, state, control, model=model)
    monitor.on_train_end(None, state, control, model=model)
    monitor.on_train_end(None, state, control, model=model)
    assert [h["step"] for h in monitor.history] == [0, 2, 3], "the last step once, however often the hook runs"
    assert monitor.rolled_back_to is None and not control.should_training_stop, "observe only: a drop of 0.4 is kept"
