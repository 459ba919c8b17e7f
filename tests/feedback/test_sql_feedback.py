"""SqlFeedbackSource on SQLite: field cases F1–F3, corrections, tasks, quarantine and errors."""

from __future__ import annotations

import warnings
from datetime import datetime, timezone

import pytest

from connectors.feedback_tables.source import SqlFeedbackSource
from sdk.errors import ConfigError, SourceError
from sdk.sources import resolve_source
from sdk.tasks.records import AnswerVerifier

from conftest import row

QUICK = {"url": "sqlite:///{name}", "table": "chat_feedback", "timezone": "UTC"}


def read(db, **options):
    opts = {"url": f"sqlite:///{db.name}", "table": "chat_feedback", "timezone": "UTC", **options}
    source = SqlFeedbackSource(opts, db.parent, "feedback/support")
    return source.read()


def dump(result):
    return [r.model_dump(mode="json") for r in
            [*result.sft_examples, *result.preference_pairs, *result.tasks, *result.quarantined]]


def test_entry_point_resolves_to_the_class():
    assert resolve_source("sql_feedback") is SqlFeedbackSource


def test_f1_latest_per_message_and_user_wins_and_reruns_agree(feedback_db):
    rows = [row("m1", 1, user="u7", at="2026-01-01T10:00:00.120+00:00"),
            row("m1", 1, user="u7", at="2026-01-01T10:00:00.180+00:00"),
            row("m1", -1, user="u7", at="2026-01-01T10:02:00+00:00"),
            row("m2", 1, user="u7", response="Call tl.add(a, b).")]
    db = feedback_db(rows)
    first = read(db)
    assert first.counts["duplicates_dropped"] == 2
    assert first.counts["negative_unused"] == 1  # m1 ended as a thumbs-down
    assert [e.messages[-1].content for e in first.sft_examples] == ["Call tl.add(a, b)."]
    assert dump(read(db)) == dump(first)
    # the same events inserted in another order give the same output
    again = read(feedback_db(list(reversed(rows))))
    assert [e.messages for e in again.sft_examples] == [e.messages for e in first.sft_examples]
    assert again.counts == first.counts


def test_f1_different_users_are_not_duplicates(feedback_db):
    result = read(feedback_db([row("m1", 1, user="u1"), row("m1", 1, user="u2")]))
    assert result.counts["duplicates_dropped"] == 0
    assert len(result.sft_examples) == 2


def test_f2_null_is_unlabelled_and_zero_is_a_score(feedback_db):
    db = feedback_db([row("a", None), row("b", -1), row("c", 1)])
    result = read(db)
    assert result.counts["unlabelled"] == 1 and result.counts["negative_unused"] == 1
    assert len(result.sft_examples) == 1
    zero_to_five = read(feedback_db([row("z", 0), row("n", None), row("f", 5)]),
                        rating={"kind": "range", "min": 0, "max": 5})
    assert zero_to_five.counts["negative_unused"] == 1  # 0 is a real low score
    assert zero_to_five.counts["unlabelled"] == 1
    assert len(zero_to_five.sft_examples) == 1


def test_f2_nested_json_rating_is_read_by_explicit_path(feedback_db):
    db = feedback_db([row("j1", None, meta={"rating": 1, "details": {"rating": 8}}),
                      row("j2", None, meta={"rating": None, "details": {"rating": None}}),
                      row("j3", None, meta="null"),
                      row("j4", None, meta={"details": {"rating": 3}})])
    result = read(db, columns={"rating": None}, json_paths={"rating": "meta:$.details.rating"},
                  rating="scale_0_10", auto_columns=True)
    assert len(result.sft_examples) == 1 and ";message_id=j1;user=" in result.sft_examples[0].source.locator
    assert result.counts["unlabelled"] == 2  # JSON null and a null column are not zero
    assert result.counts["negative_unused"] == 1


def test_f2_values_off_the_declared_scale_are_quarantined_with_reason(feedback_db):
    result = read(feedback_db([row("t0", 0), row("t5", 5), row("ok", 1)]))
    reasons = sorted(q.reason for q in result.quarantined)
    assert reasons == ["rating 0 is not on the thumbs scale (+1 / -1)", "rating 5 is not on the thumbs scale (+1 / -1)"]
    assert result.counts["quarantined"] == 2 and len(result.sft_examples) == 1


def test_f3_mixed_zones_become_utc_and_since_uses_the_instant(feedback_db):
    stamps = ["2026-03-01T12:00:00+00:00", "2026-03-01T09:00:00-03:00", "2026-03-01T13:00:00", "2026-03-01T14:00:00Z"]
    db = feedback_db([row(f"m{i}", 1, at=at) for i, at in enumerate(stamps)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = read(db, timezone=None, since="2026-03-01T11:30:00Z")
    assert len(result.sft_examples) == 4 and result.counts["before_since"] == 0
    assert result.counts["naive_timestamps"] == 1
    assert any("naive timestamps read as UTC" in str(w.message) for w in caught)
    undated = read(feedback_db([row("x", 1, at=None)]), since="2026-03-01T11:30:00Z")
    assert undated.counts["no_timestamp_with_since"] == 1 and undated.counts["before_since"] == 0
    later = read(db, since="2026-03-01T12:30:00+00:00")
    assert len(later.sft_examples) == 2 and later.counts["before_since"] == 2
    berlin = read(db, timezone="Europe/Berlin", since="2026-03-01T12:30:00+00:00")  # naive 13:00 CET = 12:00 UTC
    assert len(berlin.sft_examples) == 1


def test_correction_gives_sft_target_and_preference_pair(feedback_db):
    result = read(feedback_db([row("m1", -1, response="use sum()", correction="use tl.add(a, b)")]))
    assert [e.messages[-1].content for e in result.sft_examples] == ["use tl.add(a, b)"]
    (pair,) = result.preference_pairs
    assert (pair.chosen, pair.rejected) == ("use tl.add(a, b)", "use sum()")
    assert pair.prompt[-1].content == "How do I add?"
    assert result.counts["preference_pairs"] == 1 and result.counts["negative_unused"] == 0


def test_rated_failure_with_expected_answer_becomes_a_task(feedback_db):
    db = feedback_db([row("m1", -1, prompt="2+2?", response="5", meta={"expected": "4"}),
                      row("m2", 1, prompt="3+3?", response="6", meta={"expected": "6"})])
    result = read(db, json_paths={"expected": {"column": "meta", "path": "expected"}})
    (task,) = result.tasks
    assert isinstance(task.verifier, AnswerVerifier) and task.verifier.expected == "4"
    assert task.metadata["rejected"] == "5" and task.reference is None
    assert len(result.sft_examples) == 1


def test_system_prompt_and_chat_prompt_from_json(feedback_db):
    meta = {"sys": "You are terse.", "chat": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                                              {"role": "user", "content": "add?"}]}
    result = read(feedback_db([row("m1", 1, meta=meta)]),
                  json_paths={"system_prompt": "meta:sys", "prompt": "meta:chat"}, columns={"prompt": None})
    (ex,) = result.sft_examples
    assert [m.role for m in ex.messages] == ["system", "user", "assistant", "user", "assistant"]


def test_missing_prompt_and_bad_json_are_quarantined_without_text(feedback_db):
    db = feedback_db([row("m1", 1, prompt=""), row("m2", 1, meta="{not json"), row("m3", 1)])
    result = read(db, json_paths={"expected": "meta:expected"})
    reasons = sorted(q.reason.split(" (")[0] for q in result.quarantined)
    assert reasons == ["column 'meta' is not valid JSON", "missing prompt"]
    assert all("How do I add" not in str(q.raw) for q in result.quarantined)
    assert len(result.sft_examples) == 1


def test_query_and_filter(feedback_db):
    db = feedback_db([row("m1", 1), row("m2", 1, conv="c2"), row("m3", -1)])
    by_query = read(db, table=None, query="SELECT * FROM chat_feedback WHERE rating = 1")
    assert len(by_query.sft_examples) == 2
    filtered = read(db, filter="conversation_id = 'c2'")
    assert filtered.counts["rows_read"] == 1


@pytest.mark.parametrize("options, words", [
    ({"url": "postgresql+psycopg2://nobody@127.0.0.1:1/none", "table": "t"}, "cannot connect"),
    ({"url": "sqlite:///missing.db", "table": "t"}, "does not exist"),
    ({"table": "nope"}, "table 'nope' does not exist"),
    ({"columns": {"rating": "stars"}}, "columns ['stars'] are not in"),
    ({"url": "not a url"}, "not a SQLAlchemy URL"),
])
def test_unusable_sources_raise_one_clear_source_error(feedback_db, options, words):
    db = feedback_db([row("m1", 1)])
    with pytest.raises(SourceError) as info:
        read(db, **options)
    assert words in info.value.what and info.value.fix
    assert info.value.__cause__ is None  # no driver traceback chained


@pytest.mark.parametrize("options", [{"table": "a", "query": "select 1"}, {"table": None},
                                     {"rating": {"kind": "range", "min": 5, "max": 1}},
                                     {"json_paths": {"rating": "no-colon"}}, {"timezone": "Mars/Olympus"},
                                     {"columns": {"rating": "rating"}, "json_paths": {"rating": "meta:r"}}])
def test_bad_options_are_config_errors(tmp_path, options):
    with pytest.raises(ConfigError):
        SqlFeedbackSource({"table": "chat_feedback", **options}, tmp_path, "f")


def test_quickstart_table_reads_with_a_small_mapping(feedback_db):
    rows = [row("m1", 1, conv="c1", at="2026-02-01T09:00:00-05:00", meta={"model": "smol"}),
            row("m2", -1, conv="c1", at="2026-02-01 15:00:00", correction="Use tl.add().", meta={}),
            row("m3", None, conv="c2", at="2026-02-01T16:00:00Z", meta=None)]
    db = feedback_db(rows)
    source = SqlFeedbackSource({"url": f"sqlite:///{db.name}", "table": "chat_feedback"}, db.parent, "feedback/support")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = source.read()
    assert result.counts["rows_read"] == 3
    assert len(result.sft_examples) == 2 and len(result.preference_pairs) == 1
    assert result.counts["unlabelled"] == 1 and result.counts["quarantined"] == 0
    assert result.sft_examples[0].source.locator.startswith("row_id=")
    assert datetime(2026, 2, 1, 14, tzinfo=timezone.utc)  # offsets parsed: see test_f3


def test_long_conversation_is_cut_keeping_system_and_rated_turn(feedback_db):
    chat = [{"role": "user", "content": "a" * 50}, {"role": "assistant", "content": "b" * 50},
            {"role": "user", "content": "c" * 50}, {"role": "assistant", "content": "d" * 50},
            {"role": "user", "content": "the rated question"}]
    db = feedback_db([row("m1", 1, meta={"sys": "house rules", "chat": chat})])
    result = read(db, json_paths={"system_prompt": "meta:sys", "prompt": "meta:chat"}, columns={"prompt": None},
                  max_prompt_chars=150)
    (ex,) = result.sft_examples
    assert [m.content for m in ex.messages] == ["house rules", "c" * 50, "d" * 50, "the rated question", "Use add()."]
    assert result.counts["conversations_cut"] == 1


def test_user_ids_leave_only_as_pseudonyms(feedback_db):
    result = read(feedback_db([row("m1", 1, user="jane.roe@example.com"), row("m2", 1, user="jane.roe@example.com")]))
    locators = [e.source.locator for e in result.sft_examples]
    assert all("jane" not in loc for loc in locators)
    assert len({loc.split("user=")[1] for loc in locators}) == 1  # the same user stays linkable


def test_docstring_config_example_validates(tmp_path):
    import yaml

    import connectors.feedback_tables.source as module

    block = module.__doc__.split("::\n", 1)[1]
    (entry,) = yaml.safe_load(block)
    source = SqlFeedbackSource(entry["options"], tmp_path, entry["domain"])
    assert source.options.rating.kind == "stars_1_5" and source.options.json_paths["expected"].column == "meta"


def test_bad_row_inside_a_duplicate_group_does_not_split_it(feedback_db):
    db = feedback_db([row("m1", 1, at="2026-01-01T10:00:00+00:00"),
                      row("m1", 1, at="2026-01-01T10:01:00+00:00", meta="{broken"),
                      row("m1", -1, at="2026-01-01T10:02:00+00:00")])
    result = read(db, json_paths={"expected": "meta:expected"})
    assert result.counts["quarantined"] == 1 and result.counts["duplicates_dropped"] == 1
    assert result.sft_examples == [] and result.counts["negative_unused"] == 1
