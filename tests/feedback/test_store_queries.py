"""The store's typed reads (``iter_feedback``, ``iter_unrated_corrections``) and the one scale definition."""

from __future__ import annotations

import pytest

from connectors.feedback_tables.collector import GOOD, CollectorFeedbackSource
from connectors.feedback_tables.mapping import RatingScale
from feedback.scales import SCALES, normalise
from feedback.store import (Application, ChatMessage, Correction, FeedbackEvent, FeedbackItem, Interaction,
                            iter_feedback, iter_unrated_corrections, sessions)
from sdk.errors import ConfigError, SourceError


@pytest.fixture
def store(tmp_path):
    """A migrated store: app ``bot`` with interactions 1 (rated twice, corrected) and 2 (corrected, unrated),
    app ``other`` with interaction 3 (rated). Returns the session factory."""
    factory = sessions(f"sqlite:///{tmp_path / 'store.db'}")
    with factory() as s:
        bot, other = Application(name="bot"), Application(name="other")
        s.add_all([bot, other])
        s.flush()
        for app, n in ((bot, 1), (bot, 2), (other, 3)):
            s.add(Interaction(application_id=app.id, conversation_id=f"c{n}", messages=[
                ChatMessage(position=0, role="system", content="rules"),
                ChatMessage(position=1, role="user", content=f"first {n}"),
                ChatMessage(position=2, role="assistant", content=f"early {n}"),
                ChatMessage(position=3, role="user", content=f"q {n}"),
                ChatMessage(position=4, role="assistant", content=f"a {n}")]))
        s.flush()
        s.add_all([FeedbackEvent(application_id=bot.id, interaction_id=1, user_id=None, rating=-1, scale="thumbs"),
                   FeedbackEvent(application_id=bot.id, interaction_id=1, user_id="u1", rating=4, scale="stars_1_5"),
                   FeedbackEvent(application_id=other.id, interaction_id=3, user_id="u1", rating=1, scale="thumbs"),
                   Correction(application_id=bot.id, interaction_id=1, user_id=None, content="anon fix"),
                   Correction(application_id=bot.id, interaction_id=1, user_id="u1", content="old fix"),
                   Correction(application_id=bot.id, interaction_id=1, user_id="u1", content="new fix"),
                   Correction(application_id=bot.id, interaction_id=2, user_id="u2", content="fix 2")])
        s.commit()
    return factory


def test_iter_feedback_gives_plain_records_with_texts_and_the_raters_latest_correction(store):
    with store() as s:
        items = list(iter_feedback(s, "bot"))
    assert all(type(i) is FeedbackItem for i in items)
    assert [(i.id, i.user_id, i.rating, i.scale, i.correction) for i in items] == [
        (1, None, -1.0, "thumbs", "anon fix"),  # anonymous matches anonymous, not u1's fixes
        (2, "u1", 4.0, "stars_1_5", "new fix")]
    first = items[0]
    assert (first.kind, first.interaction_id, first.conversation_id) == ("rating", 1, "c1")
    assert (first.system_prompt, first.prompt, first.response) == ("rules", "q 1", "a 1")  # last turns, first system


def test_iter_feedback_after_is_a_keyset_watermark_and_application_filters(store):
    with store() as s:
        assert [i.id for i in iter_feedback(s, None)] == [1, 2, 3]
        assert [i.id for i in iter_feedback(s, None, after=1, batch_size=1)] == [2, 3]
        assert [i.id for i in iter_feedback(s, "bot", after=2)] == []
        assert [i.id for i in iter_feedback(s, "other")] == [3]
        assert list(iter_feedback(s, "nobody")) == []


def test_iter_unrated_corrections_skips_corrections_whose_user_rated(store):
    with store() as s:
        items = list(iter_unrated_corrections(s, "bot"))
        assert [(i.kind, i.id, i.user_id, i.correction, i.rating, i.scale) for i in items] == [
            ("correction", 4, "u2", "fix 2", None, None)]
        assert items[0].prompt == "q 2" and items[0].response == "a 2"
        assert list(iter_unrated_corrections(s, "bot", after=4)) == []


def test_collector_threshold_classifies_each_scale_as_its_own_default():
    for name, scale in SCALES.items():
        values = [-1.0, 1.0] if name == "thumbs" else [float(v) for v in range(int(scale.min), int(scale.max) + 1)]
        assert [normalise(v, name) >= GOOD for v in values] == [v >= scale.good for v in values], name
        assert RatingScale(kind=name).bounds() == (scale.min, scale.max)
        assert RatingScale(kind=name).default_threshold() == scale.good


def test_collector_reads_unknown_scales_into_quarantine(store, tmp_path):
    with store() as s:
        s.add(FeedbackEvent(application_id=1, interaction_id=2, user_id="u3", rating=3, scale="percent"))
        s.commit()
    result = CollectorFeedbackSource({"url": f"sqlite:///{tmp_path / 'store.db'}", "application": "bot"},
                                     tmp_path, "feedback/bot").read()
    assert [q.reason for q in result.quarantined] == ["rating scale 'percent' is not one of "
                                                      "['scale_0_10', 'stars_1_5', 'thumbs']"]
    assert result.quarantined[0].raw == {"row_id": 2 * 4, "message_id": 2, "conversation_id": "c2"}
    assert sorted(e.messages[-1].content for e in result.sft_examples) == ["anon fix", "fix 2", "new fix"]


def test_collector_refuses_store_fixed_options_and_an_unmigrated_store(tmp_path):
    for key, value in (("table", "feedback_events"), ("query", "SELECT 1"), ("filter", "1=1"), ("rating", "thumbs")):
        with pytest.raises(ConfigError, match="store's own schema"):
            CollectorFeedbackSource({key: value}, tmp_path, "f")
    (tmp_path / "empty.db").touch()
    with pytest.raises(SourceError, match="feedback store"):
        CollectorFeedbackSource({"url": "sqlite:///empty.db"}, tmp_path, "f").read()
