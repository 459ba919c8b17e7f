"""`tuneloop loop` compares the candidate with production on the same tasks: the held-out set and tasks
replayed from recent feedback, same prompts and seeds for both, and gates on the paired difference;
`trainer:` and `compare.evaluator:` in the YAML let the CLI run a pass with no Python glue."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from feedback.loop import CompareConfig, from_dotted, load_loop_config, run_pass
from feedback.registry import list_versions
from feedback.store import ChatMessage, Correction, FeedbackEvent, Interaction, create_api_key, sessions
from feedback.transitions import end_canary
from feedback.versus import CompareTask, GenerationEvaluator, compare_sets, load_tasks, replay_tasks, token_f1
from sdk.errors import ConfigError
from sdk.run.cli import app as cli
from sdk.run.lineage import Lineage, write_lineage
from tests.serve.lora_fixtures import make_adapter

HELDOUT = [CompareTask(f"h{i}", ({"role": "user", "content": f"held-out question {i}"},), f"answer {i}", 100 + i)
           for i in range(4)]


def train(run_config: Path, overrides: dict, run_dir: Path) -> Path:
    """A trainer: a real adapter for the run config's base model, its weights seeded by the run folder."""
    base = yaml.safe_load(Path(run_config).read_text())["base_model"]
    seed = int(hashlib.sha256(run_dir.name.encode()).hexdigest(), 16) % 1000
    out = make_adapter(base, run_dir / "sft" / "adapter", seed=seed)
    write_lineage(out, Lineage(stage="sft", base_model=base, promotable=True))
    return out


class FakeEvaluator:
    """Scores by (label, task kind); records every call's adapters and (task id, seed) lists."""

    def __init__(self, production: dict[str, float], candidate: dict[str, float],
                 heldout: tuple[CompareTask, ...] = tuple(HELDOUT)) -> None:
        self.by_label, self.tasks = {"production": production, "candidate": candidate}, list(heldout)
        self.calls: list[tuple[dict, list[tuple[str, int]], list[str]]] = []

    def heldout(self) -> list[CompareTask]:
        return list(self.tasks)

    def scores(self, adapters: dict[str, str], tasks) -> dict[str, list[float]]:
        self.calls.append((dict(adapters), [(t.id, t.seed) for t in tasks], [t.reference for t in tasks]))
        kind = lambda t: "replay" if t.id.startswith("replay-") else "heldout"  # noqa: E731
        return {label: [self.by_label[label][kind(t)] for t in tasks] for label in adapters}


def make_trainer(cfg):
    """``trainer:`` factory named by the YAML of the CLI test."""
    return train


def make_evaluator(cfg):
    """``compare.evaluator:`` factory named by the YAML of the CLI test (candidate better everywhere)."""
    return FakeEvaluator({"heldout": 0.5, "replay": 0.2}, {"heldout": 0.75, "replay": 0.9})


@pytest.fixture
def setup(tmp_path, tiny_model_dir):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        create_api_key(s, "bot")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({"base_model": tiny_model_dir}))
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump({
        "store_url": url, "application": "bot", "adapter": "support", "run_config": "run.yaml",
        "trainer": "tests.feedback.test_loop_compare:make_trainer", "min_new_feedback": 3,
        "compare": {"evaluator": "tests.feedback.test_loop_compare:make_evaluator"},
        "canary": {"fraction": 0.5, "min_samples": 2, "max_drop": 0.1}}))
    return url, path


def chat(url: str, question: str, answer: str, rating: int, fix: str | None = None) -> int:
    """One rated interaction (user question, assistant answer), optionally corrected; its id."""
    with sessions(url, upgrade=False)() as s:
        row = Interaction(application_id=1, external_id=f"run-{question}", user_id="u1", model="support@1")
        s.add(row)
        s.flush()
        s.add_all([ChatMessage(interaction_id=row.id, position=0, role="user", content=question),
                   ChatMessage(interaction_id=row.id, position=1, role="assistant", content=answer)])
        s.add(FeedbackEvent(application_id=1, interaction_id=row.id, rating=rating, scale="thumbs"))
        if fix:
            s.add(Correction(application_id=1, interaction_id=row.id, content=fix))
        s.commit()
        return row.id


def test_candidate_and_production_answer_the_same_tasks_and_the_gate_reads_the_pairs(setup):
    url, path = setup
    cfg = load_loop_config(path)
    for q in ("q1", "q2", "q3"):
        chat(url, q, f"liked answer to {q}", 1)
    first = FakeEvaluator({}, {})
    assert run_pass(cfg, evaluator=first).action == "promoted-first" and not first.calls  # nothing to compare with
    chat(url, "q4", "bad", -1, fix="what I wanted for q4")
    chat(url, "q5", "bad", -1, fix="what I wanted for q5")
    chat(url, "q6", "bad", -1)  # rated down, no correction: no reference, not replayed
    better = FakeEvaluator({"heldout": 0.5, "replay": 0.2}, {"heldout": 0.75, "replay": 0.8})
    assert run_pass(cfg, evaluator=better).action == "canary-started"
    ((adapters, scored, refs),) = better.calls  # one call: both adapters, one task list, one seed per task
    assert set(adapters) == {"production", "candidate"} and adapters["production"].endswith("pass-3/sft/adapter")
    assert scored[:4] == [(t.id, t.seed) for t in HELDOUT]
    assert [i for i, _ in scored[4:]] == ["replay-1", "replay-2", "replay-3", "replay-4", "replay-5"]
    assert refs[4:] == ["liked answer to q1", "liked answer to q2", "liked answer to q3",
                        "what I wanted for q4", "what I wanted for q5"]
    with sessions(url, upgrade=False)() as s:
        versus = list_versions(s, "bot", "support")[1].eval["versus_production"]
        end_canary(s, "bot", "support", actor="t", reason="make room for the next candidate")
    assert versus["production"] == "support@1"
    assert (versus["heldout"]["n"], versus["heldout"]["diff"], versus["heldout"]["passed"]) == (4, 0.25, True)
    assert (versus["replay"]["n"], round(versus["replay"]["diff"], 3)) == (5, 0.6)
    for q in ("q7", "q8", "q9"):
        chat(url, q, "fine", 1)
    worse = FakeEvaluator({"heldout": 0.75, "replay": 0.9}, {"heldout": 0.5, "replay": 0.4})
    failed = run_pass(cfg.model_copy(update={"max_heldout_drop": 0.1}), evaluator=worse)
    assert failed.action == "gate-failed"
    assert ("on 4 heldout tasks (same prompts, same seeds) the candidate scores 0.500 against production "
            "support@1's 0.750: change -0.250") in failed.detail
    assert "more than the allowed drop 0.1" in failed.detail and "on 8 replay tasks" in failed.detail
    with sessions(url, upgrade=False)() as s:
        v3 = list_versions(s, "bot", "support")[2]
    assert (v3.state, v3.gate_passed) == ("candidate", False) and v3.eval["versus_production"]["replay"]["n"] == 8


def test_the_cli_trains_and_compares_from_the_yaml_alone(setup):
    url, path = setup
    for q in ("q1", "q2", "q3"):
        chat(url, q, "liked", 1)
    runner = CliRunner()
    first = runner.invoke(cli, ["loop", str(path), "--json"])
    assert first.exit_code == 0, first.output
    printed = first.output[first.output.index('{"action"'):].splitlines()[0]  # after any progress bar of the loads
    assert json.loads(printed)["action"] == "promoted-first"
    for q in ("q4", "q5", "q6"):
        chat(url, q, "bad", -1, fix=f"fixed {q}")
    second = runner.invoke(cli, ["loop", str(path)])
    assert second.exit_code == 0 and "canary-started: support@2" in second.output, second.output
    with sessions(url, upgrade=False)() as s:
        v2 = list_versions(s, "bot", "support")[1]
    assert v2.eval["versus_production"]["replay"]["n"] == 6 and v2.parent == 1


def test_bad_trainer_or_evaluator_references_are_config_errors(setup, tmp_path):
    url, path = setup
    cfg = load_loop_config(path)
    with pytest.raises(ConfigError, match="cannot import 'no_such_module'"):
        from_dotted("no_such_module:make", cfg)
    with pytest.raises(ConfigError, match="is not module:attr or has no such attribute"):
        from_dotted("tests.feedback.test_loop_compare:nothing_here", cfg)
    raw = yaml.safe_load(path.read_text())
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**raw, "trainer": "tests.feedback.test_loop_compare"}))
    for q in ("q1", "q2", "q3"):
        chat(url, q, "liked", 1)
    result = CliRunner().invoke(cli, ["loop", str(tmp_path / "bad.yaml")])
    assert result.exit_code != 0 and "is not module:attr" in result.output


def test_replay_tasks_take_the_latest_rated_interactions_up_to_the_watermark(setup):
    url, _ = setup
    ids = [chat(url, f"q{i}", f"a{i}", 1 if i % 2 else -1, fix=None if i % 2 else f"fix{i}") for i in range(6)]
    with sessions(url, upgrade=False)() as s:
        got = replay_tasks(s, 1, up_to=5, limit=3)  # feedback ids 1..5; the three latest: interactions 3, 4, 5
        again = replay_tasks(s, 1, up_to=5, limit=3)
    assert [t.id for t in got] == [f"replay-{i}" for i in ids[2:5]]
    assert [t.reference for t in got] == ["fix2", "a3", "fix4"]
    assert got[0].messages == ({"role": "user", "content": "q2"},) and got == again  # stable seeds


def test_generation_evaluator_pairs_answers_on_the_tiny_model(tiny_model_dir, tmp_path):
    from tests.serve.lora_fixtures import make_adapter as adapter

    a, b = adapter(tiny_model_dir, tmp_path / "a", seed=1), adapter(tiny_model_dir, tmp_path / "b", seed=2)
    (tmp_path / "h.jsonl").write_text("\n".join(json.dumps({"id": f"t{i}", "prompt": f"def f{i}(x):",
                                                            "reference": "return x"}) for i in range(3)))
    ev = GenerationEvaluator(tiny_model_dir, load_tasks(tmp_path / "h.jsonl"), max_tokens=4)
    same = compare_sets(ev, str(a), str(a), {"heldout": ev.heldout()}, {"heldout": 0.0})[0]
    assert (same.n, same.diff, same.passed) == (3, 0.0, True)
    assert ev.answers["production"] == ev.answers["candidate"]  # same adapter, same seeds: same answers
    other = compare_sets(ev, str(b), str(a), {"heldout": ev.heldout()}, {"heldout": 0.0})[0]
    assert other.n == 3 and ev.answers["production"] != ev.answers["candidate"]


def test_token_f1_and_held_out_file_errors(tmp_path):
    assert token_f1("TL;DR: use len()", "TL;DR: use len().") == pytest.approx(2 * (8 / 9) / (1 + 8 / 9))
    assert token_f1("nothing", "else") == 0.0 and token_f1("a b", "b a") == 1.0
    (tmp_path / "dup.jsonl").write_text('{"id": "x", "prompt": "p", "reference": "r"}\n' * 2)
    with pytest.raises(ConfigError, match="duplicate id 'x'"):
        load_tasks(tmp_path / "dup.jsonl")
    (tmp_path / "noref.jsonl").write_text('{"prompt": "p"}\n')
    with pytest.raises(ConfigError, match="line 1: needs prompt and reference"):
        load_tasks(tmp_path / "noref.jsonl")


class PipelineLikeTrainer:
    """Writes what a pipeline run leaves (config.json, eval/tuned.jsonl) with the given held-out pass rates."""

    def __init__(self, base: str, rates: list[dict[str, float]], eval_settings: list[dict] | None = None) -> None:
        self.base, self.rates, self.settings = base, list(rates), list(eval_settings or [])

    def __call__(self, run_config: Path, overrides: dict, run_dir: Path) -> Path:
        from sdk.eval.records import EvalRow, save_rows

        out = train(run_config, overrides, run_dir)
        settings = self.settings.pop(0) if self.settings else {"n_samples": 2, "temperature": 0.7}
        (run_dir / "config.json").write_text(json.dumps({"seed": 7, "eval": settings}))
        rows = [EvalRow(task_id=t, domain="d", split="heldout", model="tuned", completions=("a", "b"),
                        rewards=(1.0, 0.0), passed=(rate >= 0.5, rate >= 1.0), statuses=("ok", "ok"), flags=((), ()))
                for t, rate in self.rates.pop(0).items()]
        save_rows(run_dir / "eval" / "tuned.jsonl", rows)
        return out


def test_pipeline_runs_are_paired_on_their_own_held_out_rows(setup, tiny_model_dir):
    url, path = setup
    cfg = load_loop_config(path).model_copy(update={"compare": CompareConfig(replay_limit=0)})
    nothing = FakeEvaluator({}, {}, heldout=())  # no held-out file: the runs' own rows are paired
    trainer = PipelineLikeTrainer(tiny_model_dir, [{"t1": 1.0, "t2": 1.0, "t3": 0.5, "only-old": 1.0},
                                                   {"t1": 0.5, "t2": 0.0, "t3": 0.5, "only-new": 1.0},
                                                   {"t1": 1.0, "t2": 1.0}],
                                  [{"n_samples": 2}, {"n_samples": 2}, {"n_samples": 8}])
    for q in ("q1", "q2", "q3"):
        chat(url, q, "liked", 1)
    assert run_pass(cfg, trainer, evaluator=nothing).action == "promoted-first"
    for q in ("q4", "q5", "q6"):
        chat(url, q, "liked", 1)
    failed = run_pass(cfg, trainer, evaluator=nothing)  # t1..t3 in both runs: 0.83 -> 0.33
    assert failed.action == "gate-failed" and "on 3 heldout tasks" in failed.detail and "change -0.500" in failed.detail
    with sessions(url, upgrade=False)() as s:
        versus = list_versions(s, "bot", "support")[1].eval["versus_production"]
    assert "eval/tuned.jsonl" in versus["heldout_note"] and versus["replay"]["n"] == 0
    for q in ("q7", "q8", "q9"):
        chat(url, q, "liked", 1)
    third = run_pass(cfg, trainer, evaluator=nothing)  # other eval settings: not paired, said so
    with sessions(url, upgrade=False)() as s:
        versus = list_versions(s, "bot", "support")[2].eval["versus_production"]
    assert third.action == "canary-started" and versus["heldout"]["n"] == 0
    assert versus["heldout_note"] == "no held-out pairs: the two runs evaluated with different seed or eval settings"
