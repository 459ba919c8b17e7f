"""Canary metrics and the fixed rule: wait below min_samples, promote within max_drop, roll back past it."""

from __future__ import annotations

import pytest

from feedback import attribution  # noqa: F401 - installs the attribution hook
from feedback.canary import CanaryRule, decide, decide_and_apply, version_metrics, wilson
from feedback.registry import Registration, get_head, list_events, register
from feedback.store import Correction, FeedbackEvent, Interaction, create_api_key, sessions
from feedback.transitions import promote, start_canary


def test_wilson_interval():
    lo, hi = wilson(8, 10)
    assert 0.49 < lo < 0.5 and 0.94 < hi < 0.95
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.fixture
def make(tmp_path):
    make = sessions(f"sqlite:///{tmp_path / 'store.db'}")
    with make() as s:
        create_api_key(s, "bot")
        for p in ("/a", "/b"):
            register(s, "bot", "support", Registration(adapter_path=p, adapter_sha256="0" * 64, lora_rank=8,
                                                       base_model="tiny", base_model_sha256="1" * 64, gate_passed=True),
                     actor="ann")
        promote(s, "bot", "support", 1, actor="ann", reason="first")
        start_canary(s, "bot", "support", 2, 0.2, CanaryRule(min_samples=20, max_drop=0.1).to_dict(), actor="loop",
                     reason="new candidate")
    return make


def feed(make, number: int, good: int, bad: int, corrections: int = 0) -> None:
    """Interactions served by support@number, rated good/bad; the first ``corrections`` corrected."""
    with make() as s:
        for i in range(good + bad):
            row = Interaction(application_id=1, model=f"support@{number}", user_id=f"u{number}-{i}")
            s.add(row)
            s.flush()
            s.add(FeedbackEvent(application_id=1, interaction_id=row.id, rating=1 if i < good else -1, scale="thumbs"))
            if i < corrections:
                s.add(Correction(application_id=1, interaction_id=row.id, content="better"))
        s.commit()


def test_metrics_per_version_with_intervals(make):
    feed(make, 1, good=15, bad=5, corrections=2)
    feed(make, 2, good=9, bad=1)
    with make() as s:
        m = version_metrics(s, "bot", "support")
    assert (m[1].served, m[1].ratings, m[1].positive_rate, m[1].correction_rate) == (20, 20, 0.75, 0.1)
    assert m[2].positive_rate == 0.9 and m[2].positive_interval[0] < 0.9 < m[2].positive_interval[1]


def test_rule_waits_then_promotes_and_audits(make):
    feed(make, 1, good=15, bad=5)
    feed(make, 2, good=9, bad=1)
    with make() as s:
        assert decide_and_apply(s, "bot", "support").action == "wait"
        assert get_head(s, "bot", "support").canary == 2
    feed(make, 2, good=8, bad=2)
    with make() as s:
        d = decide_and_apply(s, "bot", "support")
        assert d.action == "promote" and get_head(s, "bot", "support").production == 2
        event = [e for e in list_events(s, "bot") if e.action == "promote"][-1]
        assert event.actor == "canary-rule" and "positive rate 0.850" in event.reason
        assert event.details["canary"]["ratings"] == 20 and event.details["rule"]["max_drop"] == 0.1


def test_rule_rolls_back_a_worse_canary(make):
    feed(make, 1, good=18, bad=2)
    feed(make, 2, good=10, bad=10)
    with make() as s:
        d = decide_and_apply(s, "bot", "support")
        assert d.action == "rollback" and "dropped 0.400 > max_drop 0.1" in d.reason
        head = get_head(s, "bot", "support")
        assert (head.production, head.canary) == (1, None)
        assert list_events(s, "bot")[-1].action == "canary-rollback"


def test_decide_is_pure_and_reads_only_its_rule():
    from feedback.canary import VersionMetrics

    p = VersionMetrics(1, 100, 100, 0.8, (0.7, 0.9), 0.1, (0.05, 0.2))
    c = VersionMetrics(2, 100, 100, 0.75, (0.65, 0.85), 0.3, (0.2, 0.4))
    assert decide(CanaryRule(min_samples=50, max_drop=0.1), p, c).action == "promote"
    assert decide(CanaryRule(min_samples=50, max_drop=0.1, max_correction_rise=0.1), p, c).action == "rollback"
    assert decide(CanaryRule(min_samples=200), p, c).action == "wait"
