"""The production loop in one script, on CPU: registry, one server for every version, attributed
feedback, a canary decided by its rule, a refused bad candidate, a rollback drill, the audit log.

    .venv/bin/python examples/production_loop/run_example.py                 # SmolLM2-135M, a few minutes
    .venv/bin/python examples/production_loop/run_example.py --model tiny    # tiny random model, seconds

Everything runs in this process against a SQLite store in ``--workdir``: the collector service
(``feedback.service.create_app``, the app behind ``tuneloop feedback serve``) and the CPU
multi-adapter server (``sdk.serve.server.create_server``, behind ``tuneloop adapters serve``) are the
real FastAPI apps, called through their HTTP API in-process. The bot is LangChain's ChatOpenAI
with tuneloop's feedback callback; it never names a version — the server's response does, and the
callback and collector record it. Users are the deterministic population of ``users.py``; the
loop's trainer and evaluator are named in ``loop.yaml`` (``trainer.py``: real LoRA SFT; the gate
compares candidate and production on the same held-out and replayed tasks), so a pass is exactly
``tuneloop loop WORKDIR/loop.yaml``. Writes ``summary.json`` in the workdir.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parents[1])]

import yaml  # noqa: E402

from examples.production_loop.trainer import ExampleTrainer, settings  # noqa: E402
from examples.production_loop.users import USERS, correction, likes, question_for  # noqa: E402

NAME = "support"


def say(text: str = "") -> None:
    """Print one line of the walkthrough (flushed: the script is long on SmolLM2)."""
    print(text, flush=True)


class World:
    """The store, the collector, the server and the bot, built in ``work`` for ``base``."""

    def __init__(self, work: Path, base: str, run_config: Path) -> None:
        from fastapi.testclient import TestClient

        from feedback.loop import load_loop_config
        from feedback.service import create_app
        from feedback.store import create_api_key, sessions

        self.work, self.base, self.url = work, base, f"sqlite:///{work / 'store.db'}"
        with sessions(self.url)() as s:
            key = create_api_key(s, "bot")
        self.collector = TestClient(create_app(self.url, upgrade=False), headers={"X-API-Key": key})
        (work / "trainer.yaml").write_text(yaml.safe_dump({**settings(run_config), "base_model": base}))
        loop = yaml.safe_load((_HERE / "loop.yaml").read_text())
        loop.update(store_url=self.url, run_config=str(work / "trainer.yaml"), runs_dir=str(work / "loop_runs"))
        (work / "loop.yaml").write_text(yaml.safe_dump(loop, sort_keys=False))
        self.loop_cfg = load_loop_config(work / "loop.yaml")
        self.server = None
        self.seen: dict[str, str] = {}  # interaction external id -> the version that answered it

    def start_server(self) -> None:
        """The CPU server of every live version, its routes read from the collector's /v1/routes."""
        from fastapi.testclient import TestClient
        from langchain_openai import ChatOpenAI

        from sdk.serve.multi import MultiAdapterModel
        from sdk.serve.routes import RouteTable
        from sdk.serve.server import RouteKeeper, create_server

        model = MultiAdapterModel(self.base)
        keeper = RouteKeeper(lambda: RouteTable.model_validate(self.collector.get("/v1/routes").json()), model,
                             cache=self.work / "routes-cache.json")
        self.server = TestClient(create_server(model, keeper))
        self.llm = ChatOpenAI(model=NAME, base_url="http://testserver/v1", api_key="unused", http_client=self.server,
                              max_tokens=12, temperature=0)

    def refresh(self) -> list[str]:
        """Make the server re-read the routes now (it also polls); the loaded versions."""
        self.server.post("/v1/tuneloop/refresh")
        return sorted(m["id"] for m in self.server.get("/v1/models").json()["data"])

    def ask(self, user: str, turn: int) -> str:
        """``user`` asks the bot, rates the answer, maybe corrects it; the version that answered."""
        import sqlalchemy as sa

        from feedback.callback import FeedbackCallbackHandler
        from feedback.store import Interaction

        cb = FeedbackCallbackHandler(self.collector, user_id=user, conversation_id=f"conv-{user}", raise_on_error=True)
        question = question_for(user, turn)
        msg = self.llm.invoke(question, config={"callbacks": [cb]}, user=user)
        version, reply = msg.response_metadata["model_name"], str(msg.content)
        with self.collector.app.state.sessions() as s:
            run_id = s.scalars(sa.select(Interaction.external_id).order_by(Interaction.id.desc()).limit(1)).one()
        self.seen[run_id] = version
        cb.rate(run_id, 1 if likes(user, reply) else -1)
        fix = correction(user, question, reply)
        if fix:
            self.collector.post("/v1/corrections", headers={"Idempotency-Key": f"fix-{run_id}"},
                                json={"external_id": run_id, "content": fix, "user_id": user})
        return version

    def traffic(self, turn: int) -> dict[str, int]:
        """Every user asks once; how many requests each version answered."""
        counts: dict[str, int] = {}
        for user in USERS:
            v = self.ask(user, turn)
            counts[v] = counts.get(v, 0) + 1
        return counts

    def metrics(self) -> dict[str, dict]:
        """Live metrics per version (the collector's /v1/adapters/NAME/metrics)."""
        return self.collector.get(f"/v1/adapters/{NAME}/metrics").json()


def show_metrics(world: World) -> dict[str, dict]:
    """Print the per-version positive-rating and correction rates with their 95 % intervals."""
    m = world.metrics()
    for n, row in m.items():
        rate = "-" if row["positive_rate"] is None else f"{row['positive_rate']:.2f}"
        lo, hi = row["positive_interval"]
        say(f"    {NAME}@{n}: served {row['served']:3d}, ratings {row['ratings']:3d}, positive {rate} "
            f"[{lo:.2f}, {hi:.2f}], corrections {row['correction_rate'] or 0:.2f}")
    return m


def first_version(world: World) -> None:
    """Train support@1 on the bot's existing answers, register it (with its probe, V3) and promote it."""
    from feedback.registration import registration_from_folder
    from feedback.registry import register
    from feedback.store import sessions
    from feedback.transitions import promote

    say("1. support@1: trained on the bot's existing answers, registered, promoted by hand")
    adapter = ExampleTrainer(world.url)(world.loop_cfg.path(world.loop_cfg.run_config), {}, world.work / "v1")
    with sessions(world.url, upgrade=False)() as s:
        v = register(s, "bot", NAME, registration_from_folder(adapter, feedback_watermark=0, probe=True),
                     actor="ml-engineer", reason="first adapter")
        promote(s, "bot", NAME, v.number, actor="ml-engineer", reason="first version; gate: nothing to regress against")
    say(f"    registered {v.label}: base sha {v.base_model_sha256[:12]}, adapter sha {v.adapter_sha256[:12]}, "
        f"rank {v.lora_rank}")


def verify(world: World, number: int) -> None:
    """V3 after publishing: the server lists the version, same digest, same probe log-probabilities."""
    from feedback.publish import verify_served
    from feedback.registry import get_version
    from feedback.store import sessions

    with sessions(world.url, upgrade=False)() as s:
        v = get_version(s, "bot", NAME, number)
    verify_served(world.server, v)
    say(f"    V3: the server serves {v.label} with the registry's digest and probe log-probabilities")


def loop_pass(world: World, **overrides) -> object:
    """One ``tuneloop loop WORKDIR/loop.yaml`` pass (trainer and evaluator from the YAML); prints its result."""
    from feedback.loop import run_pass

    cfg = world.loop_cfg if not overrides else world.loop_cfg.model_copy(update={"set": overrides})
    result = run_pass(cfg, holder="example-loop")
    say(f"    tuneloop loop: {result.action}: {result.detail}")
    return result


def comparison(world: World, number: int) -> dict:
    """What the loop recorded for version ``number``: the trainer's report and the paired comparison."""
    from feedback.registry import get_version
    from feedback.store import sessions

    with sessions(world.url, upgrade=False)() as s:
        v = get_version(s, "bot", NAME, number)
    report = json.loads((Path(v.adapter_path).parents[1] / "report.json").read_text())
    versus = v.eval["versus_production"]
    for kind in ("heldout", "replay"):
        c = versus[kind]
        say(f"    {kind}: {c['n']} tasks, same prompts and seeds: TL;DR rate {c['production']:.2f} "
            f"({versus['production']}) -> {c['candidate']:.2f}, change {c['diff']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]")
    return {**report, "versus": versus}


def canary(world: World) -> dict:
    """Start support@2's canary from the users' corrections and let the rule decide."""
    say("3. tuneloop loop: enough new feedback -> train support@2 from support@1 on the corrections, gate, canary")
    started = loop_pass(world)
    assert started.action == "canary-started", started
    say("    compared with production on the same tasks (the gate):")
    report = comparison(world, started.version)
    say(f"    trained on {report['rows']} {report['data']}, {report['steps']} steps")
    say(f"    server now loads {world.refresh()}")
    verify(world, started.version)
    say(f"4. canary: {world.loop_cfg.canary.fraction:.0%} of users (sticky per user) go to support@2; "
        f"rule: >= {world.loop_cfg.canary.min_samples} ratings each, max drop {world.loop_cfg.canary.max_drop}")
    for turn in range(1, 9):
        say(f"    round {turn}: answered by {world.traffic(turn)}")
        decision = world.collector.post(f"/v1/adapters/{NAME}/canary/decide").json()
        if decision["action"] != "wait":
            break
        say(f"      rule: wait ({decision['reason']})")
    say(f"    rule: {decision['action']}: {decision['reason']}")
    metrics = show_metrics(world)
    say(f"    server now loads {world.refresh()}")
    return {"decision": decision["action"], "reason": decision["reason"], "metrics": metrics, "gate": report}


def bad_candidate(world: World) -> dict:
    """A candidate trained back on the old answers fails the gate; promoting it is refused with why."""
    say("5. a bad candidate (trained back on the old answers): the gate fails, a promotion is refused")
    result = loop_pass(world, **{"example.data": "answers"})
    comparison(world, result.version)
    r = world.collector.post(f"/v1/adapters/{NAME}/promote",
                             json={"version": result.version, "reason": "ship it anyway", "by": "impatient-pm"})
    refusal = r.json().get("error") if r.status_code >= 400 else f"promoted: {r.json().get('label')}"
    say(f"    POST /v1/adapters/{NAME}/promote {{version: {result.version}}} -> {r.status_code}: {refusal}")
    if result.action == "canary-started":  # the gate saw no drop (a model too small to learn the behaviour)
        world.collector.post(f"/v1/adapters/{NAME}/rollback", json={"reason": "example: end it", "canary": True})
    return {"action": result.action, "version": result.version, "refusal_status": r.status_code, "refusal": refusal}


def _move(world: World, path: str, body: dict) -> str:
    """POST a registry move; the production label after it, or the refusal."""
    r = world.collector.post(f"/v1/adapters/{NAME}/{path}", json=body)
    world.refresh()
    return r.json()["label"] if r.status_code == 200 else f"refused ({r.status_code}): {r.json()['error']}"


def rollback_drill(world: World) -> dict:
    """Roll production back (audited), check the traffic follows, roll forward again."""
    say("6. rollback drill: production back to its previous version, then forward again")
    production = world.collector.get(f"/v1/adapters/{NAME}/versions/production").json()["label"]
    back = _move(world, "rollback", {"reason": "drill", "by": "oncall"})
    answered = world.ask(USERS[2], 20)
    say(f"    rollback -> production is {back}; a request now answered by {answered}")
    forward = _move(world, "promote", {"version": int(production.split("@")[1]), "reason": "drill over", "by": "oncall"})
    say(f"    promote {production} -> production is {forward}; a request now answered by {world.ask(USERS[2], 21)}")
    return {"rolled_back_to": back, "answered_after_rollback": answered, "restored": forward}


def audit(world: World) -> dict:
    """Print the registry, the audit log, and check every rated interaction's attribution."""
    import sqlalchemy as sa

    from feedback.registry_models import AdapterVersion, InteractionVersion
    from feedback.store import FeedbackEvent, Interaction, sessions

    say("7. the registry and its audit log (GET /v1/adapters, /v1/adapters/support/events)")
    states = {v["label"]: v["state"] for v in world.collector.get("/v1/adapters").json()}
    say(f"    {states}")
    events = world.collector.get(f"/v1/adapters/{NAME}/events").json()
    for e in events:
        say(f"    {e['at'][:19]}  {NAME}@{e['number']:<2} {e['action']:<16} {str(e['from_state']):>10} -> "
            f"{e['to_state']:<10} by {e['actor']:<28} {e['reason'][:70]}")
    with sessions(world.url, upgrade=False)() as s:
        rows = s.execute(sa.select(Interaction.external_id, AdapterVersion.number)
                         .join(FeedbackEvent, FeedbackEvent.interaction_id == Interaction.id)
                         .join(InteractionVersion, InteractionVersion.interaction_id == Interaction.id)
                         .join(AdapterVersion, AdapterVersion.id == InteractionVersion.version_id)).all()
    wrong = sum(1 for ext, n in rows if world.seen.get(ext) != f"{NAME}@{n}")
    say(f"8. attribution: {len(rows)} rated interactions, each recorded with the version that answered it "
        f"({wrong} mismatches, {len(world.seen) - len(rows)} unattributed)")
    return {"states": states, "events": [(e["number"], e["action"], e["actor"]) for e in events],
            "attributed": len(rows), "mismatched": wrong, "requests": len(world.seen)}


def quiet_libraries() -> None:
    """No per-load progress bars from transformers/datasets, no library warnings: the walkthrough is the output."""
    import warnings

    import datasets
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def torch_threads() -> None:
    """One torch thread when the machine is busier than its cores: two threads that wait on each other
    at every parallel region are many times slower than one under heavy shared load."""
    import os

    import torch

    if os.getloadavg()[0] > (os.cpu_count() or 1) and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)


def main(argv: list[str] | None = None) -> dict:
    """Run the walkthrough; returns (and writes to WORKDIR/summary.json) what happened."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="smollm2-135m (default), tiny, or a model folder")
    ap.add_argument("--workdir", default="production_loop_run", help="created fresh (an old one is replaced)")
    ap.add_argument("--run-config", default=str(_HERE / "trainer.yaml"), help="the trainer's settings (YAML)")
    args = ap.parse_args(argv)
    from sdk.models import build_tiny_model, resolve_model

    quiet_libraries()
    torch_threads()

    start, work = time.time(), Path(args.workdir).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = (str(build_tiny_model(work / "tiny-model")) if args.model == "tiny"
            else resolve_model(args.model, "~/.cache/tuneloop/models"))
    world = World(work, base, Path(args.run_config).resolve())
    say(f"production loop example: base {args.model}, store {world.url}")
    first_version(world)
    world.start_server()
    say(f"2. the server loads {world.refresh()}; every user asks once, rates, picky users correct")
    verify(world, 1)
    say(f"    answered by {world.traffic(0)}")
    show_metrics(world)
    summary = {"model": args.model, "canary": canary(world), "bad_candidate": bad_candidate(world),
               "rollback": rollback_drill(world)}
    summary.update(audit(world), seconds=round(time.time() - start, 1))
    (work / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    say(f"done in {summary['seconds']:.0f} s; summary in {work / 'summary.json'}")
    return summary


if __name__ == "__main__":
    main()
