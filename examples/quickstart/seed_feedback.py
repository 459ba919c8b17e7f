"""Seed ``feedback.db``: production feedback of an internal coding assistant, in SQLite.

Usage: ``python seed_feedback.py [PATH] [--repo-context YAML]`` (default: ``feedback.db`` next to this
script; ``--repo-context '{enabled: true, token_budget: 150, examples: false}'``: the IDE prompts'
repository context for a run that overrides ``config.yaml``'s, e.g. an arm of ``bench/arms.py --tasks-set``).
The file is overwritten. Output is deterministic (seeded ``random.Random``, fixed clock).

Table ``chat_feedback(id INTEGER PRIMARY KEY, conversation_id TEXT, message_id TEXT,
user_id TEXT, created_at TEXT, app TEXT, prompt TEXT, response TEXT, rating INTEGER NULL,
correction TEXT NULL, meta TEXT)``: one row per feedback event, in time order.

What is in it (the shapes of shared/cases/CASES.md F1-F4):

- users of ``app = 'ledger-assistant'`` ask for small acme_ledger-style helpers
  (``feedback_data.HELPERS``; none of them is a function of the package, so nothing leaks
  into held-out tasks). A response either follows the house conventions (Result via
  ``ok``/``err``, ``ErrorCode``, ``Money``) or is the naive plain-Python version a base model
  writes (bare values, exceptions); responses are one function in a ```python fence;
- kinds: convention response rated +1; naive response rated -1 with a ``correction``
  holding the convention version; naive rated -1 without correction; NULL ratings;
- F1: double clicks (same message and user, the same rating 60 ms apart) and changed
  minds (a later event on the same message and user with the other rating: the latest wins);
- F2: ``meta`` JSON with a nested ``{"rating": r, "details": {"rating": 0-10}}`` on some
  rows, a JSON ``null`` rating on some NULL-rated rows;
- F3: ``created_at`` as ``+00:00``, ``-03:00``, ``Z`` or naive (UTC wall clock) text;
- F4: prompts with e-mails (one percent-encoded), phone numbers and an SSN;
- rows of another assistant (``app = 'hr-helpdesk'``) share the table: filter on ``app``.
"""

from __future__ import annotations

import ast
import functools
import json
import random
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from feedback_data import HELPERS, OFF_TOPIC, PII_NOTES  # noqa: E402

SEED = 20260302
APP = "ledger-assistant"
MODELS = {APP: "acme-coder-2026.02", "hr-helpdesk": "hr-answers-3"}
START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
COLUMNS = (
    "id",
    "conversation_id",
    "message_id",
    "user_id",
    "created_at",
    "app",
    "prompt",
    "response",
    "rating",
    "correction",
    "meta",
)
SCHEMA = """CREATE TABLE chat_feedback (
    id INTEGER PRIMARY KEY, conversation_id TEXT, message_id TEXT, user_id TEXT,
    created_at TEXT, app TEXT, prompt TEXT, response TEXT, rating INTEGER NULL,
    correction TEXT NULL, meta TEXT)"""
#: (kind, weight): what happened to one request. ``good``/``naive`` is the response style.
KINDS = [("good_up", 30), ("naive_down_fix", 37), ("naive_down", 8), ("good_null", 10), ("naive_null", 15)]
TZ_STYLES = ("utc", "minus3", "zulu", "naive")


def good_version(name: str, params: str, doc: str, body: list[str]) -> str:
    """The convention-following definition: typed signature, ``-> Result``, docstring."""
    lines = [f"def {name}({params}) -> Result:", f'    """{doc}"""'] + ["    " + b for b in body]
    return "\n".join(lines)


def naive_version(name: str, params: str, doc: str, body: list[str]) -> str:
    """What a model that does not know the house style writes: bare values, exceptions.

    ``return ok(X)`` becomes ``return X`` (a ``Money(...)`` wrapper is dropped too) and
    ``return err(ErrorCode.C)`` becomes ``raise ValueError("c")``; the ``-> Result``
    annotation goes.
    """
    out = []
    for line in body:
        indent = line[: len(line) - len(line.lstrip())]
        code = line.strip()
        if code.startswith("return err(ErrorCode."):
            code = f'raise ValueError("{code[len("return err(ErrorCode.") : -1].lower()}")'
        elif code.startswith("return ok("):
            value = code[len("return ok(") : -1]
            if value.startswith("Money(") and value.endswith(")"):
                value = value[len("Money(") : -1]
            code = f"return {value}"
        out.append("    " + indent + code)
    return "\n".join([f"def {name}({params}):", f'    """{doc}"""', *out])


def fenced(code: str) -> str:
    """``code`` in a ```python fence."""
    return f"```python\n{code}\n```"


def module_imports(module: str, uses: str | None = None) -> str:
    """The import block of ``acme_ledger/<module>.py``, one statement a line, as the IDE shows it.

    With ``uses`` (the function's source), only the imported names it uses are kept, as the
    pytest connector's prompt does (``connectors.suites.pysource.ModuleInfo.imports_for``).
    """
    source = (HERE / "acme_ledger" / f"{module}.py").read_text(encoding="utf-8")
    nodes = [n for n in ast.parse(source).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if uses is None:
        return "".join(ast.get_source_segment(source, n) + "\n" for n in nodes)
    used = {n.id for n in ast.walk(ast.parse(uses)) if isinstance(n, ast.Name)}
    out = []
    for node in nodes:
        names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
        if names:
            clone = (ast.ImportFrom(node.module, names, node.level) if isinstance(node, ast.ImportFrom)
                     else ast.Import(names))
            out.append(ast.unparse(clone) + "\n")
    return "".join(out)


def build_repo_context(raw: dict):
    """The pytest connector's :class:`connectors.suites.context.RepoContext` over ``acme_ledger`` for
    the ``repo_context`` options ``raw`` (as written under the pytest source in ``config.yaml``), or
    None when they turn repository context off. Examples stay off: they come from a function's
    tests, and a feedback helper has none.

    Raises:
        pydantic.ValidationError: ``raw`` holds an unknown option or a bad value.
    """
    from connectors.suites.context import RepoContext, RepoContextOptions
    from connectors.suites.pyrepo import read_package

    options = RepoContextOptions(**raw)
    if not options.enabled:
        return None
    _, files = read_package(HERE, HERE / "acme_ledger")
    return RepoContext(options.model_copy(update={"examples": False}), files, "acme_ledger")


@functools.lru_cache(maxsize=1)
def repo_context():
    """:func:`build_repo_context` of ``config.yaml``'s pytest-source ``repo_context`` options: the IDE
    plug-in shows the same definitions the tuning prompts show."""
    sources = yaml.safe_load((HERE / "config.yaml").read_text(encoding="utf-8"))["sources"]
    return build_repo_context(next(s.get("options") or {} for s in sources if s["type"] == "pytest")
                              .get("repo_context") or {})


def ide_prompt(module: str, name: str, params: str, doc: str, uses: str | None = None) -> str:
    """The IDE plug-in's "write this function in this file" template.

    It mirrors the task prompt of tuneloop's pytest connector (``connectors/suites/pytest_suite.py``,
    ``context: signature``), so SFT rows from feedback and evaluation prompts share one format; with
    repository context on in ``config.yaml`` (and ``uses``, the function's source, given), the same
    "From the repository" block follows, rendered by the connector's own :func:`repo_context` (no
    test trace here, so no traced methods; examples need tests, so none).
    ``tests/examples/test_quickstart_content.py`` checks that the two stay identical.
    """
    stub = f'def {name}({params}) -> Result:\n    """{doc}"""\n    ...'
    text = (
        f"Write the function `{name}` of `acme_ledger/{module}.py`. Reply with the complete `def {name}` "
        f"definition in one ```python block.\n\n{fenced(module_imports(module, uses) + chr(10) + chr(10) + stub)}"
    )
    context = repo_context() if uses is not None else None
    if context is None:
        return text
    from sdk.tasks.records import Message, ReferenceOnly, Source, Task

    task = Task(domain="acme", prompt=(Message(role="user", content=text),), verifier=ReferenceOnly(),
                reference=uses, source=Source(connector="ide", locator=f"acme_ledger/{module}.py::{name}"))
    return context.add(task).prompt[-1].content


def make_prompt(rng: random.Random, module: str, name: str, params: str, doc: str, uses: str | None = None) -> str:
    """A user request in one of four styles.

    ``ide``: :func:`ide_prompt`; ``stub``: a pasted stub; ``ask``: a direct request;
    ``casual``: a one-liner.
    """
    style = rng.choice(("ide", "ide", "stub", "ask", "casual"))
    if style == "ide":
        return ide_prompt(module, name, params, doc, uses)
    if style == "stub":
        stub = f'def {name}({params}) -> Result:\n    """{doc}"""'
        return f"Implement this acme_ledger helper:\n{fenced(stub)}"
    if style == "ask":
        return f"Write `{name}({params})` for acme_ledger: {doc}"
    return f"need {name} in the ledger code - {doc[0].lower()}{doc[1:]}"


def stamp(moment: datetime, style: str) -> str:
    """``moment`` (aware UTC) as text in one of the time-zone styles of CASES F3."""
    ms = f"{moment.microsecond // 1000:03d}"
    if style == "utc":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + ms + "+00:00"
    if style == "minus3":
        local = moment.astimezone(timezone(timedelta(hours=-3)))
        return local.strftime("%Y-%m-%dT%H:%M:%S.") + ms + "-03:00"
    if style == "zulu":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + ms + "Z"
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _meta(rng: random.Random, client: str, model: str, rating: int | None) -> dict:
    meta: dict = {"client": client, "model": model, "latency_ms": rng.randint(300, 2400)}
    if rating is not None and rng.random() < 0.25:
        score = rng.randint(7, 10) if rating > 0 else rng.randint(0, 4)
        meta.update(rating=rating, details={"rating": score})
    elif rating is None and rng.random() < 0.35:
        meta["rating"] = None
    return meta


def _event(
    rng: random.Random, ask: dict, when: datetime, rating: int | None, correction: str | None, extra: str = ""
) -> dict:
    user = ask["user"]
    return {
        "kind": ask["kind"],
        "extra": extra,
        "pii": ask.get("pii", False),
        "conversation_id": ask["conversation_id"],
        "message_id": ask["message_id"],
        "user_id": user["id"],
        "moment": when,
        "created_at": stamp(when, user["tz"]),
        "app": ask["app"],
        "prompt": ask["prompt"],
        "response": ask["response"],
        "rating": rating,
        "correction": correction,
        "meta": json.dumps(_meta(rng, user["client"], MODELS[ask["app"]], rating), sort_keys=True),
    }


def _requests(rng: random.Random, users: list[dict]) -> list[dict]:
    """One dict per assistant answer: who asked, when, what, and the kind of feedback."""
    asks = []
    kinds, weights = zip(*KINDS)
    for module, name, params, doc, body in [(m, *h) for m, helpers in HELPERS.items() for h in helpers]:
        for _ in range(rng.choice((2, 3, 3, 4))):
            kind = rng.choices(kinds, weights)[0]
            code = (
                good_version(name, params, doc, body)
                if kind.startswith("good")
                else naive_version(name, params, doc, body)
            )
            intro = rng.choice(("", "", "Here you go:\n", "Sure:\n"))
            asks.append(
                {
                    "kind": kind,
                    "helper": name,
                    "user": rng.choice(users),
                    "app": APP,
                    "prompt": make_prompt(rng, module, name, params, doc, good_version(name, params, doc, body)),
                    "response": intro + fenced(code),
                    "correction": fenced(good_version(name, params, doc, body)),
                    "when": START + timedelta(seconds=rng.randint(0, 20 * 86400), milliseconds=rng.randint(0, 999)),
                }
            )
    for (question, answer), rating in zip(OFF_TOPIC, (1, None, 1, 1, None, -1)):
        asks.append(
            {
                "kind": "off_topic",
                "helper": None,
                "user": rng.choice(users),
                "app": "hr-helpdesk",
                "prompt": question,
                "response": answer,
                "correction": None,
                "rating": rating,
                "when": START + timedelta(seconds=rng.randint(0, 20 * 86400)),
            }
        )
    rng.shuffle(asks)
    for ask in asks:
        ask["conversation_id"] = f"c-{rng.getrandbits(48):012x}"
        ask["message_id"] = f"m-{rng.getrandbits(48):012x}"
    return asks


def _events_for(rng: random.Random, ask: dict, extra: str) -> list[dict]:
    """Feedback events of one answer.

    ``extra``: '' (one event), 'double_click' (the same event twice, 60 ms apart),
    'changed_mind' (an earlier event with the opposite rating; the later one wins) or
    'click_then_change' (CASES F1: +1, +1 again 60 ms later, then the final rating).
    """
    kind, when = ask["kind"], ask["when"]
    if kind == "off_topic":
        return [_event(rng, ask, when, ask["rating"], None)]
    rating = {"good_up": 1, "naive_down_fix": -1, "naive_down": -1}.get(kind)
    fix = ask["correction"] if kind == "naive_down_fix" else None
    final = _event(rng, ask, when, rating, fix)
    if extra == "double_click":
        return [final, _event(rng, ask, when + timedelta(milliseconds=60), rating, fix, extra)]
    if extra in ("changed_mind", "click_then_change"):
        first_at = when - timedelta(seconds=rng.randint(20, 300))
        events = [_event(rng, ask, first_at, -rating, None, extra), final]
        if extra == "click_then_change":
            events.insert(1, _event(rng, ask, first_at + timedelta(milliseconds=60), -rating, None, extra))
        return events
    return [final]


def build_rows(seed: int = SEED) -> list[dict]:
    """All rows of ``chat_feedback`` in time order, as dicts keyed by :data:`COLUMNS`.

    Deterministic for a given ``seed``. Keys that are not columns describe the row for tests
    and docs: ``kind`` (one of :data:`KINDS` or ``off_topic``), ``extra`` (the F1 shape the
    row belongs to, see :func:`_events_for`) and ``pii`` (the prompt holds personal data).
    """
    rng = random.Random(seed)
    users = [
        {"id": f"u-{1001 + i}", "tz": TZ_STYLES[i % 4], "client": ("vscode", "jetbrains", "web")[i % 3]}
        for i in range(18)
    ]
    asks = _requests(rng, users)
    rated_up = [a for a in asks if a["kind"] == "good_up"]
    rated_fix = [a for a in asks if a["kind"] == "naive_down_fix"]
    extras = {id(a): "double_click" for a in rated_up[:6] + rated_fix[:3]}
    extras.update({id(a): "changed_mind" for a in rated_up[6:9] + rated_fix[3:6]})
    extras[id(rated_fix[6])] = "click_then_change"
    for ask, note in zip([a for a in asks if a["kind"] != "off_topic"][-len(PII_NOTES) :], PII_NOTES):
        ask["prompt"], ask["pii"] = f"{ask['prompt']}\n{note}", True
    events = [e for a in asks for e in _events_for(rng, a, extras.get(id(a), ""))]
    events.sort(key=lambda e: (e["moment"], e["message_id"]))
    rows = []
    for i, e in enumerate(events, start=1):
        rows.append(
            {"id": i, **{c: e[c] for c in COLUMNS[1:]}, "kind": e["kind"], "extra": e["extra"], "pii": e["pii"]}
        )
    return rows


def write_db(path: Path, rows: list[dict]) -> None:
    """Create (or overwrite) the SQLite file at ``path`` with ``chat_feedback`` holding ``rows``."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as con:
        con.execute(SCHEMA)
        con.executemany(
            f"INSERT INTO chat_feedback ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
            [tuple(r[c] for c in COLUMNS) for r in rows],
        )
    con.close()


def main(argv: list[str]) -> int:
    """Entry point: ``seed_feedback.py [PATH] [--repo-context YAML]``; prints the row count and the path.

    Raises:
        SystemExit: ``--repo-context`` without a value, or a value that is not a YAML mapping.
    """
    args = list(argv[1:])
    if "--repo-context" in args:
        at = args.index("--repo-context")
        raw = yaml.safe_load(args[at + 1]) if at + 1 < len(args) else None
        if not isinstance(raw, dict):
            raise SystemExit("--repo-context needs a YAML mapping, e.g. '{enabled: true, token_budget: 150}'")
        context = build_repo_context(raw)
        globals()["repo_context"] = lambda: context
        del args[at:at + 2]
    path = Path(args[0]) if args else HERE / "feedback.db"
    rows = build_rows()
    write_db(path, rows)
    print(f"wrote {len(rows)} rows of chat_feedback to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
