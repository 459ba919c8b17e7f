"""HTML for the report's change completion section (issue 17; id ``change-completion``).

Rendered by :func:`sdk.eval.html.render_html` only when the report has a ``change_completion``
section (change tasks were evaluated): the change completion rate base vs tuned per split with
95% intervals, then one ``<details>`` per task with each side's diff (cut diffs say so) and the
names of the fail-to-pass tests still failing and the pass-to-pass tests broken. Every value
from the run is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

CSS = (".cc-side{display:grid;grid-template-columns:1fr 1fr;gap:.6rem}.cc-side pre{background:#f7f7f7;"
       "padding:.4rem;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8rem;max-height:24rem;overflow:auto}")


def _pct(e: Mapping[str, Any], signed: bool = False) -> str:
    f = "+.1f" if signed else ".1f"
    return f"{100 * e['value']:{f}} [{100 * e['low']:{f}}, {100 * e['high']:{f}}]"


def _tests(kind: str, names: list[str], none: str) -> str:
    """A list of test ids (``data-tests`` names the kind) or a muted 'none' line."""
    if not names:
        return f'<p class="muted" data-tests="{kind}">{escape(none)}</p>'
    items = "".join(f"<li><code>{escape(n)}</code></li>" for n in names)
    return f'<ul data-tests="{kind}">{items}</ul>'


def _side(side: str, s: Mapping[str, Any] | None) -> str:
    """One model's change on one task: verdict, the tests it left failing or broke, and its diff."""
    if not s:
        return f"<div><b>{side}</b>: no sample</div>"
    verdict = {True: ("pass", "completed"), False: ("fail", "not completed"), None: ("muted", "not judged")}
    cls, word = verdict[s["completed"]]
    flags = f" · flags: {escape(', '.join(s['flags']))}" if s["flags"] else ""
    cut = (f'<p class="muted" data-truncated="true">diff truncated: first {len(s["diff"])} of {s["diff_chars"]} '
           "characters shown</p>") if s["diff_truncated"] else ""
    return (f'<div data-side="{side}"><b>{side}</b>: <span class="{cls}">{word}</span> '
            f"(status {escape(str(s['status']))}{flags})"
            "<p>Fail-to-pass tests still failing:</p>"
            + _tests("fail-to-pass-failing", s["fail_to_pass_failing"], "none: every fail-to-pass test passes")
            + "<p>Pass-to-pass tests broken:</p>"
            + _tests("pass-to-pass-broken", s["pass_to_pass_broken"], "none")
            + f"<pre>{escape(s['diff'])}</pre>{cut}</div>")


def change_completion_html(r: Mapping[str, Any]) -> str:
    """The ``change-completion`` section; '' when the report has none (no change task evaluated)."""
    cc = r.get("change_completion")
    if not cc:
        return ""
    rows = "".join(f"<tr><td>{escape(name)}</td><td>{sl['n_tasks']}</td><td>{_pct(sl['base'])}</td>"
                   f"<td>{_pct(sl['tuned'])}</td><td>{_pct(sl['delta'], signed=True)}</td></tr>"
                   for name, sl in cc["by_split"].items())
    head = "".join(f"<th>{h}</th>" for h in ("split", "tasks", "base [95% CI]", "tuned [95% CI]",
                                             "tuned - base [95% CI]"))
    tasks = "".join(
        f'<details data-task="{escape(t["task_id"])}"><summary><code>{escape(t["task_id"])}</code> '
        f"{escape(t['split'])} · {escape(t['domain'])} · base {_word(t.get('base'))}, tuned {_word(t.get('tuned'))}"
        f'</summary><div class="cc-side">{_side("base", t.get("base"))}{_side("tuned", t.get("tuned"))}</div></details>'
        for t in cc["tasks"])
    more = (f'<p class="muted">{cc["tasks_shown"]} of {cc["tasks_total"]} tasks shown.</p>'
            if cc["tasks_shown"] < cc["tasks_total"] else "")
    return (f'<section id="change-completion"><style>{CSS}</style><h2>Change completion: base vs tuned (%, 95% CI)</h2>'
            f"<p>Change completion rate: {escape(cc['definition'])}. Intervals: bootstrap over tasks (paired for "
            "the difference); Wilson score interval where every task has the same value.</p>"
            f'<table id="change-completion-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
            f"<h3>Per task: the model's change and the tests it left failing or broke</h3>{more}{tasks}</section>")


def _word(s: Mapping[str, Any] | None) -> str:
    if not s or s["completed"] is None:
        return "not judged"
    return "completed" if s["completed"] else "not completed"
