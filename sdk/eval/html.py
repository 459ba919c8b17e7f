"""Render a report dict (see :func:`sdk.eval.report.build_report`) as one self-contained HTML page.

Inline CSS, plots as ``data:`` PNG URIs from :mod:`sdk.eval.plots`, no script and no external
URL: the page works offline and from an e-mail attachment. Every value from the run is escaped.
Sections carry stable ids (``summary``, ``domains``, ``regressions``, ``tasks``, ``training``,
``schedule-comparison`` (when the report has one), ``flags``, ``side-effects``, ``cost``,
``cost-benefit``; issue 15: ``honesty``, ``rl-vs-sft``, ``retry``, ``per-task``, ``knee``, rendered by
:mod:`sdk.eval.html_checks`; issue 17: ``change-completion`` when change tasks were evaluated,
:mod:`sdk.eval.html_change`) so tests and readers can find them.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Iterable, Mapping, Sequence

import sdk.eval.html_change as change
import sdk.eval.html_checks as checks
import sdk.eval.plots as plots
from sdk.eval.fmt import fmt_est
from sdk.eval.report_model import EvalReport

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;color:#222;
padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.muted{color:#777}
.pass{color:#137333;font-weight:600}.fail{color:#b3261e;font-weight:600}
.rec{background:#eef4fb;border-left:4px solid #1f77b4;padding:.6rem 1rem}
figure{margin:.5rem 0}img{max-width:100%}code{font-size:.85rem}
#meta td{text-align:left;white-space:normal;max-width:60rem;overflow-wrap:anywhere}#meta thead{display:none}
"""


def render_html(report: EvalReport | Mapping[str, Any]) -> str:
    """The whole page as a string (UTF-8, no external resources). ``report``: the record, or its
    JSON form (a ``report.json`` read back); the sections render from the JSON form."""
    if isinstance(report, EvalReport):
        report = report.to_json()
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>tuneloop report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>tuneloop report</h1>", _meta(report),
        _summary(report), change.change_completion_html(report), checks.honesty_html(report),
        checks.rl_vs_sft_html(report), checks.selection_html(report), checks.retry_html(report),
        _domains(report), _regressions(report), _tasks(report),
        _training(report), _schedule(report),
        _flags(report), _side_effects(report), _cost(report), _cost_benefit(report),
        checks.per_task_html(report), "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def _table(tid: str, head: Sequence[str], rows: Iterable[Sequence[Any]], empty: str = "none") -> str:
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    if not body:
        return f'<p class="muted" id="{tid}-empty">{escape(empty)}</p>'
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f'<table id="{tid}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _figure(name: str, uri: str | None, alt: str) -> str:
    if uri is None:
        return f'<p class="muted">{escape(alt)}: nothing to plot.</p>'
    return f'<figure><img data-plot="{name}" alt="{escape(alt)}" src="{uri}"></figure>'


def _section(sid: str, title: str, *body: str) -> str:
    return f'<section id="{sid}"><h2>{escape(title)}</h2>' + "".join(body) + "</section>"


def _meta(r: Mapping[str, Any]) -> str:
    rows = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in r["meta"].items()]
    rows.append(("created", r["created"]))
    rows.append(("samples per task", r["n_samples"]))
    return _table("meta", ("", ""), rows)


def _est_cells(sl: Mapping[str, Any], k: str) -> list[str]:
    if k not in sl["base"]:
        return ["-", "-", "-"]
    return [fmt_est(sl["base"][k]), fmt_est(sl["tuned"][k]), fmt_est(sl["delta"][k], signed=True)]


def _reward_cells(sl: Mapping[str, Any]) -> list[str]:
    mr = sl.get("mean_reward") or {}
    if not mr:
        return ["-", "-", "-"]
    return [fmt_est(mr["base"]), fmt_est(mr["tuned"]), fmt_est(mr["delta"], signed=True)]


def _summary(r: Mapping[str, Any]) -> str:
    cb = r["cost_benefit"]
    gate = r.get("gate")
    verdict = ""
    if gate:
        cls, word = ("pass", "PASSED") if gate["passed"] else ("fail", "FAILED")
        if not gate["enabled"]:  # a disabled gate decides nothing: no green PASSED under "Do not ship"
            cls, word = "off", f"not applied (gate.enabled is false; its checks would {'pass' if gate['passed'] else 'fail'})"
        reasons = "".join(f"<li>{escape(x)}</li>" for x in gate["reasons"] + gate["notes"])
        verdict = f'<p id="gate">Gate: <span class="{cls}">{word}</span></p><ul>{reasons}</ul>'
    rows = []
    for name, sl in {**r["summary"], "all": r["overall"]}.items():
        for k in map(str, r["ks"]):
            rows.append([name, f"pass@{k}", sl["n_tasks"], *_est_cells(sl, k)])
    return _section("summary", "Summary: base vs tuned",
                    f'<p class="rec" id="recommendation">{escape(cb["recommendation"])}</p>', verdict,
                    _table("summary-table", ("split", "metric", "tasks", "base [95% CI]", "tuned [95% CI]",
                                             "tuned - base [95% CI]"), rows),
                    '<p class="muted">Intervals: 95% percentile bootstrap over tasks (paired for the '
                    "difference); Wilson score interval where every task has the same value. pass@k: the "
                    "unbiased estimator of Chen et al. 2021.</p>",
                    _figure("summary", plots.summary_bars(r["summary"]), "pass@1 base vs tuned"))


def _domains(r: Mapping[str, Any]) -> str:
    rows = [[d, sl["n_tasks"], *_est_cells(sl, "1")] for d, sl in r["by_domain"].items()]
    split_rows = [[s, sl["n_tasks"], *_est_cells(sl, "1"), *_reward_cells(sl)] for s, sl in r["by_split"].items()]
    head = ("", "tasks", "base pass@1", "tuned pass@1", "delta")
    return _section("domains", "Per split and per domain",
                    _table("split-table", ("split", *head[1:], "base mean reward", "tuned mean reward",
                                           "reward delta"), split_rows),
                    _table("domain-table", ("domain", *head[1:]), rows))


def _regressions(r: Mapping[str, Any]) -> str:
    d = r["diff"]
    counts = ", ".join(f"{k}: {v}" for k, v in d["counts"].items())

    def rows(items: list[dict]) -> list[list[Any]]:
        return [[x["task_id"], x["domain"], x["split"], _rate(x["base_pass_rate"]), _rate(x["tuned_pass_rate"])]
                for x in items]
    head = ("task", "domain", "split", "base pass rate", "tuned pass rate")
    return _section("regressions", "Per-task diff",
                    f'<p>All splits: {escape(counts)}. A model solves a task at a pass rate of at least '
                    f'{d["solve_threshold"]:.2f}.</p>',
                    "<h3>Regressions (base solved, tuned does not)</h3>",
                    _table("regressions-table", head, rows(d["regressions"]), "no regressions"),
                    "<h3>Gains</h3>", _table("gains-table", head, rows(d["gains"]), "no gains"),
                    "<h3>Not judged (infrastructure failures)</h3>",
                    _table("unjudged-table", head, rows(d["unjudged"]), "every task was judged"))


def _tasks(r: Mapping[str, Any]) -> str:
    t = r["tasks"]
    rows = [[s, dom, n] for s, doms in t["by_split"].items() for dom, n in sorted(doms.items())]
    q = [[reason, n] for reason, n in t["quarantined"].items()]
    parts = [_table("taskset-table", ("split", "domain", "tasks"), rows, "no task-set counts given"),
             f"<p>Quarantined: {t['quarantined_total']}</p>",
             _table("quarantine-table", ("reason", "count"), q, "nothing quarantined")]
    if t.get("strength"):  # reports from before issue 13 have no such key
        srows = [[src, s["scored"], f"{s['killed']}/{s['total']}", "-" if s["score"] is None else f"{s['score']:.0%}",
                  s["weak_tests"], s["skipped"]] for src, s in t["strength"].items()]
        parts += ["<h3>Verifier strength (mutants of each reference)</h3>",
                  _table("strength-table", ("source", "tasks scored", "mutants killed", "mutation score",
                                            "weak_tests", "not mutable"), srows, "no mutants run")]
    return _section("tasks", "Task set", *parts)


def _training(r: Mapping[str, Any]) -> str:
    figs = [_figure(f"training-{stage}", plots.curves(series, f"{stage} per step"), f"{stage} curves")
            for stage, series in r["training"].items()]
    return _section("training", "Training curves", *(figs or ['<p class="muted">no training logs given</p>']))


def _schedule(r: Mapping[str, Any]) -> str:
    """Both GRPO arms' held-out curves on one plot, the verdict and a table (``rl.compare``)."""
    sc = r.get("schedule_comparison")
    if not sc:
        return ""
    arms = [sc["arms"][k] for k in ("main", "compare")]
    series = {f"{a['stage']}: {a['label']}": [[e["step"], e["overall"]] for e in a["evaluations"]
                                              if e["overall"] is not None] for a in arms}
    by_step = [{e["step"]: e["overall"] for e in a["evaluations"]} for a in arms]
    rows = [[s, *(_rate(b.get(s)) for b in by_step),
             "-" if None in (by_step[0].get(s), by_step[1].get(s)) else f"{by_step[1][s] - by_step[0][s]:+.3f}"]
            for s in sorted(set(by_step[0]) | set(by_step[1]))]
    settings = [[a["stage"], a["label"], *_arm_cells(a)] for a in arms]
    notes = "".join(f"<li>{escape(n)}</li>" for n in sc.get("notes", []))
    cost = sc.get("cost") or {}
    spent = f"<p>The comparison arm cost {cost['wall_s']:.0f} s wall.</p>" if cost.get("wall_s") else ""
    return _section("schedule-comparison", "Schedule comparison: held-out reward per GRPO step",
                    f'<p class="rec" id="schedule-verdict">{escape(sc["verdict"])}</p>',
                    f"<ul>{notes}</ul>" if notes else "",
                    _figure("schedule-comparison", plots.arm_curves(series, "held-out reward per step"),
                            "held-out reward per step, both arms"),
                    _table("schedule-table", ("step", *(f"{a['stage']} mean reward" for a in arms), "difference"),
                           rows, "no probe evaluations"),
                    _table("schedule-arms", ("stage", "schedule", "difficulty filter", "steps trained", "stopped",
                                             "final reward"), settings),
                    '<p class="muted">Mean greedy reward over the same held-out probe tasks for both arms; the '
                    "verdict pairs the tasks at the last step both arms evaluated (95% paired bootstrap).</p>", spent)


def _arm_cells(a: Mapping[str, Any]) -> list[str]:
    if a.get("skipped"):
        return [f"skipped: {a['skipped']}", "-", "-", "-"]
    d = (a.get("settings") or {}).get("difficulty") or {}
    filt = (f"kept {d.get('kept')}, dropped {d.get('dropped')} of {d.get('measured')} measured"
            + (f" ({d['not_sampled']} not sampled)" if d.get("not_sampled") else "")) if d.get("enabled") else "off"
    final = a.get("final") or {}
    stopped = "-" if a.get("stopped_at") is None else f"step {a['stopped_at']} (rolled back to {a['rolled_back_to']})"
    return [filt, str(a.get("steps_trained", "-")), stopped, _rate(final.get("overall"))]


def _flags(r: Mapping[str, Any]) -> str:
    names = sorted({f for fl in r["flags"].values() for f in fl})
    rows = [[label, *(fl.get(n, 0) for n in names)] for label, fl in r["flags"].items()] if names else []
    return _section("flags", "Reward-hacking flags per checkpoint (samples flagged)",
                    _table("flags-table", ("checkpoint", *names), rows, "no flags raised"))


def _side_effects(r: Mapping[str, Any]) -> str:
    se = r.get("side_effects") or {}
    models = list(se)
    keys = sorted({k for comp in se.values() for k in comp})
    rows = [[k, *(_component_cell(se[m].get(k)) for m in models)] for k in keys]
    return _section("side-effects", "Reward components and side effects (mean over judged samples)",
                    "<p>regressions: previously passing tests broken; hidden_gap: visible minus hidden pass "
                    "fraction; side_effect_penalty: files written, processes spawned. Cells: mean (samples "
                    "non-zero / samples).</p>",
                    _table("components-table", ("component", *models), rows, "the scorer reported no components"))


def _component_cell(stat: Mapping[str, float] | None) -> str:
    if not stat:
        return "-"
    return f"{stat['mean']:.3f} ({stat['nonzero']}/{stat['samples']})"


def _cost(r: Mapping[str, Any]) -> str:
    c = r["cost"]
    rows = [[s["stage"], s["kind"], f"{s['wall_s']:.1f}", f"{s['cpu_s']:.1f}", f"{s['gpu_s']:.1f}",
             s["tokens_generated"], s["tokens_trained"]] for s in c["stages"]]
    t = c["totals"]
    if rows:
        rows.append(["total", "", f"{t['wall_s']:.1f}", f"{t['cpu_s']:.1f}", f"{t['gpu_s']:.1f}",
                     t["tokens_generated"], t["tokens_trained"]])
    return _section("cost", "Cost per stage",
                    _table("cost-table", ("stage", "kind", "wall s", "CPU s", "GPU s", "tokens generated",
                                          "tokens trained"), rows, "no costs recorded"))


def _cost_benefit(r: Mapping[str, Any]) -> str:
    cb = r["cost_benefit"]
    pts = [[p["label"], f"{p['compute_s']:.0f}", _rate(p["heldout_pass_at_1"])] for p in cb["points"]]
    segs = [[s["from"], s["to"], f"{s['gain_pp']:+.1f}", f"{s['compute_s']:.0f}",
             "-" if s["pp_per_hour"] is None else f"{s['pp_per_hour']:+.1f}"] for s in cb["segments"]]
    fall = cb["falloff_at"]
    note = f"Returns fall off at <b>{escape(fall)}</b>." if fall else "Returns did not fall off in this run."
    return _section("cost-benefit", "Cost and benefit",
                    _figure("benefit", plots.benefit(cb["points"]), "held-out pass@1 vs training compute"),
                    _table("checkpoint-table", ("checkpoint", "training compute s", "held-out pass@1"), pts),
                    _table("marginal-table", ("from", "to", "gain pp", "compute s", "pp per compute-hour"), segs,
                           "fewer than two evaluated checkpoints"),
                    f"<p>{note}</p>", checks.knee_html(r), f'<p class="rec">{escape(cb["recommendation"])}</p>')


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
