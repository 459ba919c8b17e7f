"""HTML for the issue-15 sections of a report: RL vs SFT, the shipped adapter's choice, honesty,
retry, and each task's base and tuned completions with their test output side by side (ids
``rl-vs-sft``, ``selection``, ``honesty``, ``retry``, ``per-task``). Called by :func:`sdk.eval.html.render_html`; every value is escaped; a
report without these keys (older runs) renders none of them.

The per-task view uses ``<details>`` so a reader opens one task at a time, with no script.
"""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

PER_TASK_CSS = """
.side{display:grid;grid-template-columns:1fr 1fr;gap:.6rem}.side pre{background:#f7f7f7;padding:.4rem;
white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8rem;max-height:24rem;overflow:auto;margin:.2rem 0}
details{border-bottom:1px solid #eee;padding:.2rem 0}summary{cursor:pointer}.warn{background:#fff4e5;
border-left:4px solid #e8710a;padding:.5rem 1rem}
"""


def _est(e: Mapping[str, Any] | None, signed: bool = False, scale: float = 100.0) -> str:
    if not e:
        return "-"
    sign = "+" if signed else ""
    return (f"{scale * e['value']:{sign}.1f} [{scale * e['low']:{sign}.1f}, {scale * e['high']:{sign}.1f}]"
            + ("" if scale != 100.0 else ""))


def rl_vs_sft_html(r: Mapping[str, Any]) -> str:
    """The RL-vs-SFT comparison (pass@1 in %, paired interval) and its verdict; '' when absent."""
    sec = r.get("rl_vs_sft")
    if not sec:
        return ""
    row = (f"<tr><td>{sec['n']}</td><td>{_est(sec['sft'])}</td><td>{_est(sec['sft_rl'])}</td>"
           f"<td>{_est(sec['delta'], signed=True)}</td></tr>")
    cls = "pass" if sec["earned"] else "fail"
    return (f'<section id="rl-vs-sft"><h2>Did RL earn its place? (held-out pass@1, %, 95% CI)</h2>'
            "<table><thead><tr><th>tasks</th><th>SFT only</th><th>SFT + RL</th><th>difference</th></tr></thead>"
            f'<tbody>{row}</tbody></table><p class="{cls}">{escape(sec["verdict"])}</p></section>')


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _candidate_row(label: str, f: Mapping[str, Any], sel: Mapping[str, Any]) -> str:
    shipped = label == sel.get("chosen")
    reward = "-" if f.get("mean_reward") is None else f"{f['mean_reward']:.3f}"
    seconds = (sel.get("seconds") or {}).get(label, "-")
    cells = [label + (" (shipped)" if shipped else ""), f"{f.get('passed', 0):g}/{f.get('tasks', 0)}",
             _pct(f.get("pass_at_1")), reward, str(seconds), _pct(f.get("heldout_pass_at_1"))]
    tr = '<tr class="pass">' if shipped else "<tr>"
    return tr + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"


def selection_html(r: Mapping[str, Any]) -> str:
    """Which adapter ships as tuned and why, with every candidate's validation figures beside its
    held-out pass@1 (read after the choice); '' for reports without a choice."""
    sel = r.get("selection")
    if not sel:
        return ""
    rows = "".join(_candidate_row(label, f, sel) for label, f in (sel.get("candidates") or {}).items())
    return ('<section id="selection"><h2>Which adapter ships (chosen on the validation split)</h2>'
            f"<p><b>tuned = {escape(str(sel['chosen']))}</b> ({escape(str(sel.get('adapter', '')))}). "
            f"{escape(str(sel.get('reason', '')))}</p><p>Rule, fixed in advance: {escape(str(sel.get('rule', '')))}.</p>"
            "<table><thead><tr><th>candidate</th><th>validation passed</th><th>validation pass@1 %</th>"
            "<th>mean validation reward</th><th>seconds</th><th>held-out pass@1 % (read after, never by the choice)</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></section>")


def honesty_html(r: Mapping[str, Any]) -> str:
    """Warnings, flagged gains, grader self-test and stop reasons; '' for reports without them."""
    h = r.get("honesty")
    if not h:
        return ""
    warn = "".join(f'<p class="warn">{escape(w)}</p>' for w in h.get("warnings", ()))
    grader = h.get("grader_self_test")
    grader_txt = ("not run" if not grader else
                  f"{grader['passed']}/{grader['total']} references pass through the eval path")
    stops = "".join(f"<tr><td>{escape(k)}</td><td>{escape(', '.join(f'{a} {b}' for a, b in v.items()))}</td></tr>"
                    for k, v in h.get("stop_reasons", {}).items())
    val = h.get("validation") or {}
    val_txt = (", ".join(f"{escape(str(k))}: {escape(str(v))}" for k, v in val.items())
               or "no validation split recorded")
    return (f'<section id="honesty"><h2>Honesty checks</h2>{warn}'
            f"<p>Gains flagged for hacking (not counted): <b>{h.get('flagged_gains', 0)}</b>. "
            f"Grader self-test: {escape(grader_txt)}. All-zero baseline: {'yes' if h.get('all_zero_baseline') else 'no'}."
            f"</p><p>Validation split (steers early stopping and choices; held-out never does): {val_txt}.</p>"
            "<table><thead><tr><th>model</th><th>why generation stopped (samples)</th></tr></thead>"
            f"<tbody>{stops}</tbody></table></section>")


def retry_html(r: Mapping[str, Any]) -> str:
    """pass@1 before and after one retry with execution feedback; '' when no retry was made."""
    sec = r.get("retry")
    if not sec:
        return ""
    rows = "".join(f"<tr><td>{escape(m)}</td><td>{escape(s)}</td><td>{v['n']}</td><td>{_est(v['first'])}</td>"
                   f"<td>{_est(v['after_retry'])}</td></tr>" for m, splits in sec.items() for s, v in splits.items())
    return ('<section id="retry"><h2>Retry with execution feedback (pass@1, %, 95% CI)</h2>'
            "<table><thead><tr><th>model</th><th>split</th><th>tasks</th><th>first attempt</th>"
            f"<th>after one retry</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _side(label: str, s: Mapping[str, Any] | None) -> str:
    if not s:
        return f"<div><b>{escape(label)}</b>: not evaluated</div>"
    head = (f"<b>{escape(label)}</b>: {escape(str(s['status']))}, stop {escape(str(s['stop']))}, reward "
            f"{'-' if s['reward'] is None else format(s['reward'], '.2f')}"
            + (f", flags {escape(', '.join(s['flags']))}" if s.get("flags") else ""))
    detail = f"<pre>{escape(s['detail'])}</pre>" if s.get("detail") else ""
    return f"<div>{head}<pre>{escape(s['completion'])}</pre>{detail}</div>"


def per_task_html(r: Mapping[str, Any]) -> str:
    """Every compared task by name and file; open one to see base and tuned side by side."""
    tasks = r.get("per_task") or []
    if not tasks:
        return ""
    order = {"gain": 0, "regression": 1, "both": 2, "neither": 3, "unjudged": 4}
    items = []
    for t in sorted(tasks, key=lambda t: (t["split"], order.get(t["outcome"], 9), t.get("file", ""), t["name"])):
        where = f" ({escape(t['file'])})" if t.get("file") else ""
        items.append(f'<details data-task="{escape(t["task_id"])}"><summary>{escape(t["split"])} · '
                     f'{escape(t["outcome"])} · <code>{escape(t["name"])}</code>{where}</summary>'
                     f'<div class="side">{_side("base", t.get("base"))}{_side("tuned", t.get("tuned"))}</div></details>')
    return ('<section id="per-task"><h2>Tasks: base and tuned side by side</h2>'
            f"<style>{PER_TASK_CSS}</style>" + "".join(items) + "</section>")


def knee_html(r: Mapping[str, Any]) -> str:
    """The cost-benefit knee sentence; '' for reports without one."""
    k = (r.get("cost_benefit") or {}).get("knee")
    return f'<p id="knee">{escape(k["text"])}</p>' if k else ""
