"""`tuneloop loop`: idle below the threshold, first version promoted, next one canaried, a failed gate
never promoted, the lock refuses a second loop (naming its holder), a crashed pass resumes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from feedback.loop import LoopLockedError, acquire, load_loop_config, run_pass
from feedback.registry import app_id, get_head, list_versions
from feedback.store import FeedbackEvent, Interaction, create_api_key, sessions
from sdk.run.cli import app as cli
from sdk.run.lineage import Lineage, write_lineage
from tests.serve.lora_fixtures import make_adapter


class FakeTrainer:
    """Writes a real adapter (tiny model) with a gate verdict; records its calls; can crash once."""

    def __init__(self, base: str, verdicts: list[bool], heldout: list[float] | None = None) -> None:
        self.base, self.verdicts, self.calls, self.crash = base, list(verdicts), [], False
        self.heldout = list(heldout or [])  # tuned held-out pass@1 written per call (none: not recorded)

    def __call__(self, run_config: Path, overrides: dict, run_dir: Path) -> Path:
        self.calls.append((run_dir, dict(overrides)))
        if self.crash:
            self.crash = False
            raise RuntimeError("killed mid-training")
        out = make_adapter(self.base, run_dir / "sft" / "adapter", seed=len(self.calls))
        ok = self.verdicts.pop(0)
        scores = {"base": 0.1, "tuned": self.heldout.pop(0)} if self.heldout else {}
        write_lineage(out, Lineage(stage="sft", base_model=self.base, promotable=ok, heldout_pass_at_1=scores,
                                   gate_reasons=() if ok else ("held-out pass@1 fell by 0.2",)))
        return out


@pytest.fixture
def setup(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        create_api_key(s, "bot")
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump({"store_url": url, "application": "bot", "adapter": "support",
                                    "run_config": "run.yaml", "min_new_feedback": 3,
                                    "canary": {"fraction": 0.5, "min_samples": 2, "max_drop": 0.1}}))
    return url, path


def add_feedback(url: str, n: int, model: str | None = None, good: bool = True) -> None:
    with sessions(url, upgrade=False)() as s:
        for _ in range(n):
            row = Interaction(application_id=1, model=model)
            s.add(row)
            s.flush()
            s.add(FeedbackEvent(application_id=1, interaction_id=row.id, rating=1 if good else -1, scale="thumbs"))
        s.commit()


def test_passes_idle_promote_first_then_canary_then_gate_failure(setup, tiny_model_dir):
    url, path = setup
    cfg = load_loop_config(path)
    trainer = FakeTrainer(tiny_model_dir, [True, True, False])
    add_feedback(url, 2)
    assert run_pass(cfg, trainer).action == "idle" and not trainer.calls
    add_feedback(url, 1)
    first = run_pass(cfg, trainer)
    assert (first.action, first.version) == ("promoted-first", 1)
    assert "sft.init_adapter" not in trainer.calls[0][1] and trainer.calls[0][0].name == "pass-3"
    assert run_pass(cfg, trainer).action == "idle"  # the watermark moved to 3
    add_feedback(url, 3)
    second = run_pass(cfg, trainer)
    assert second.action == "canary-started" and trainer.calls[1][1]["sft.init_adapter"].endswith("pass-3/sft/adapter")
    with sessions(url, upgrade=False)() as s:
        v2 = list_versions(s, "bot", "support")[1]
        assert (v2.parent, v2.feedback_watermark, v2.state) == (1, 6, "canary") and v2.probe["logprobs"]
    assert run_pass(cfg, trainer).action == "canary-wait"
    add_feedback(url, 2, "support@1")
    add_feedback(url, 2, "support@2")
    assert run_pass(cfg, trainer).action == "canary-promote"
    add_feedback(url, 3)
    third = run_pass(cfg, trainer)
    assert third.action == "gate-failed" and "held-out pass@1 fell by 0.2" in third.detail
    with sessions(url, upgrade=False)() as s:
        assert get_head(s, "bot", "support").production == 2
        assert [v.state for v in list_versions(s, "bot", "support")] == ["retired", "production", "candidate"]


def test_a_candidate_below_production_on_held_out_fails_the_gate(setup, tiny_model_dir):
    url, path = setup
    cfg = load_loop_config(path)
    trainer = FakeTrainer(tiny_model_dir, [True, True, True], heldout=[0.5, 0.45, 0.5])
    add_feedback(url, 3)
    assert run_pass(cfg, trainer).action == "promoted-first"
    add_feedback(url, 3)  # passes the pipeline's gate (better than base) but is below production
    second = run_pass(cfg, trainer)
    assert second.action == "gate-failed"
    assert "held-out pass@1 0.450 is below production support@1's 0.500 (max_heldout_drop 0.0)" in second.detail
    with sessions(url, upgrade=False)() as s:
        v2 = list_versions(s, "bot", "support")[1]
        assert (v2.state, v2.gate_passed) == ("candidate", False)
    add_feedback(url, 3)  # equal to production: allowed
    assert run_pass(cfg.model_copy(update={"max_heldout_drop": 0.1}), trainer).action == "canary-started"


def test_second_loop_is_refused_naming_the_holder(setup, tiny_model_dir):
    url, path = setup
    with sessions(url, upgrade=False)() as s:
        acquire(s, app_id(s, "bot"), "support", "ann@host:42", ttl_s=600)
    with pytest.raises(LoopLockedError, match="held by ann@host:42 since"):
        run_pass(load_loop_config(path), FakeTrainer(tiny_model_dir, [True]))
    result = CliRunner().invoke(cli, ["loop", str(path)])
    assert result.exit_code == 2 and "held by ann@host:42" in result.output


def test_crashed_pass_resumes_in_the_same_run_folder(setup, tiny_model_dir):
    url, path = setup
    cfg = load_loop_config(path)
    trainer = FakeTrainer(tiny_model_dir, [True])
    trainer.crash = True
    add_feedback(url, 3)
    with pytest.raises(RuntimeError, match="killed"):
        run_pass(cfg, trainer)
    add_feedback(url, 5)  # more feedback meanwhile: the resumed pass keeps its folder and watermark
    assert run_pass(cfg, trainer).action == "promoted-first"
    assert trainer.calls[0][0] == trainer.calls[1][0] and trainer.calls[1][0].name == "pass-3"


def test_a_canary_the_server_does_not_serve_as_registered_is_rolled_back(setup, tiny_model_dir, monkeypatch):
    import httpx
    from fastapi.testclient import TestClient

    from feedback.routes import route_table
    from sdk.serve.multi import MultiAdapterModel
    from sdk.serve.server import RouteKeeper, create_server

    url, path = setup
    cfg = load_loop_config(path).model_copy(update={"serve_url": "http://testserver"})
    trainer = FakeTrainer(tiny_model_dir, [True, True])
    add_feedback(url, 3)
    run_pass(cfg, trainer)  # support@1, no canary to check

    def routes():
        with sessions(url, upgrade=False)() as s:
            table = route_table(s, "bot")
        # the server's copy of every canary is stale: another folder than the registered one
        return table.model_copy(update={"adapters": tuple(
            a.model_copy(update={"path": table.adapters[0].path}) if a.state == "canary" else a for a in table.adapters)})
    model = MultiAdapterModel(tiny_model_dir)
    server = TestClient(create_server(model, RouteKeeper(routes, model)))
    monkeypatch.setattr(httpx, "Client", lambda **_kw: server)
    add_feedback(url, 3)
    result = run_pass(cfg, trainer)
    assert result.action == "publish-failed" and "does not list support@2" in result.detail
    assert "not the registered adapter" in result.detail
    with sessions(url, upgrade=False)() as s:
        head = get_head(s, "bot", "support")
        assert (head.production, head.canary) == (1, None)
