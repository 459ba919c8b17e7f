"""The collector's edges (issue 19, part 4): overflowing ids, size and depth limits, non-finite
numbers, lone surrogates (field case L2), docs access, field descriptions; and the SQL source's
``filter:`` check. Every refusal is a 4xx with ``{error, fix}``, and the client keeps using its
connection afterwards."""

from __future__ import annotations

import json
import uuid

import pytest
from conftest import SERVERS, fresh_server_database
from fastapi.testclient import TestClient

from connectors.feedback_tables.source import SqlFeedbackSource
from feedback.limits import CollectorSettings, json_depth
from feedback.service import create_app
from feedback.store import ChatMessage, Interaction, create_api_key, sessions
from sdk.errors import ConfigError

CALL = {"external_id": "run-1", "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        key = create_api_key(s, "support-bot")
    return url, key


def make_client(store, **settings) -> TestClient:
    url, key = store
    app = create_app(url, upgrade=False, settings=CollectorSettings(**settings))
    return TestClient(app, headers={"X-API-Key": key}, raise_server_exceptions=False)


@pytest.fixture
def client(store):
    c = make_client(store)
    assert c.post("/v1/interactions", json=CALL, headers={"Idempotency-Key": "setup"}).status_code == 201
    return c


def send(client, path, raw: str):
    return client.post(path, content=raw.encode("utf-8", "surrogatepass"),
                       headers={"Idempotency-Key": uuid.uuid4().hex, "Content-Type": "application/json"})


def still_usable(client) -> None:
    page = client.get("/v1/feedback")
    assert page.status_code == 200, page.text


@pytest.mark.parametrize("after", [2**63, 10**30])
def test_after_beyond_64_bits_is_422_and_the_connection_stays_usable(client, after):
    response = client.get("/v1/feedback", params={"after": after})
    assert response.status_code == 422 and "after" in response.json()["error"] and response.json()["fix"]
    still_usable(client)


@pytest.mark.parametrize("path", ["/v1/feedback", "/v1/corrections"])
@pytest.mark.parametrize("iid", [10**30, -2**70, 2**64, 2**63])
def test_interaction_id_beyond_64_bits_is_422(client, path, iid):
    body = {"interaction_id": iid, "rating": 1} if path == "/v1/feedback" else {"interaction_id": iid, "content": "x"}
    response = send(client, path, json.dumps(body))
    assert response.status_code == 422 and "interaction_id" in response.json()["error"]
    still_usable(client)


def test_largest_id_is_accepted_as_a_plain_404(client):
    response = send(client, "/v1/feedback", json.dumps({"interaction_id": 2**63 - 1, "rating": 1}))
    assert response.status_code == 404


@pytest.mark.parametrize("server", SERVERS)
def test_overflowing_ids_are_422_on_the_servers_too(tmp_path, server):
    """Where the 500s were seen (the driver's integer overflow): PostgreSQL, and MariaDB."""
    with fresh_server_database(server, "edges") as url:
        with sessions(url)() as s:
            key = create_api_key(s, "support-bot")
        c = make_client((url, key))
        assert c.post("/v1/interactions", json=CALL, headers={"Idempotency-Key": "setup"}).status_code == 201
        for after in (2**63, 10**30):
            response = c.get("/v1/feedback", params={"after": after})
            assert response.status_code == 422 and response.json()["fix"], after
        for iid in (10**30, -2**70, 2**64, 2**63):
            response = send(c, "/v1/feedback", json.dumps({"interaction_id": iid, "rating": 1}))
            assert response.status_code == 422 and "interaction_id" in response.json()["error"], iid
        assert send(c, "/v1/feedback", json.dumps({"interaction_id": 2**63 - 1, "rating": 1})).status_code == 404
        still_usable(c)


@pytest.mark.parametrize("size", [10_000_000, 100_000_000])
def test_body_size_limit_is_413_naming_the_limit(client, size):
    body = {"messages": [{"role": "user", "content": "x" * size}]}
    response = send(client, "/v1/interactions", json.dumps(body))
    assert response.status_code == 413, response.text
    assert "1000000 bytes (max_body_bytes)" in response.json()["error"] and response.json()["fix"]
    still_usable(client)


def test_body_just_under_the_limit_is_stored(client):
    body = {"messages": [{"role": "user", "content": "x" * 150_000},
                         {"role": "assistant", "content": "y", "tool_calls": [{"blob": "z" * 200_000}]}]}
    assert send(client, "/v1/interactions", json.dumps(body)).status_code == 201


def test_body_limit_is_a_setting(store):
    small = make_client(store, max_body_bytes=100)
    response = send(small, "/v1/interactions", json.dumps(CALL) + " " * 100)
    assert response.status_code == 413 and "100 bytes" in response.json()["error"]


def test_tool_calls_over_their_limit_are_413(client):
    body = {"messages": [{"role": "assistant", "content": "y", "tool_calls": [{"args": "a" * 300_000}]}]}
    response = send(client, "/v1/interactions", json.dumps(body))
    assert response.status_code == 413 and "max_tool_calls_bytes" in response.json()["error"]
    still_usable(client)


@pytest.mark.parametrize("depth", [256, 500, 100_000])
def test_deeply_nested_tool_calls_are_422(client, depth):
    nested = '{"a":' * depth + "1" + "}" * depth
    raw = '{"messages":[{"role":"assistant","content":"y","tool_calls":[' + nested + "]}]}"
    response = send(client, "/v1/interactions", raw)
    assert response.status_code == 422 and "max_json_depth" in response.json()["error"]
    still_usable(client)


def test_nesting_within_the_limit_is_stored(client):
    nested = {"a": {"b": [{"c": [1, 2, {"d": "deep"}]}]}}
    response = send(client, "/v1/interactions", json.dumps({"messages": [
        {"role": "assistant", "content": "y", "tool_calls": [nested]}]}))
    assert response.status_code == 201


def test_json_depth_skips_brackets_inside_strings():
    assert json_depth(b'{"a": "[[[[{{{{", "b": ["\\"]]]"]}') == 2
    assert json_depth(b"1") == 0


@pytest.mark.parametrize("raw_value", ["1e999", "-1e999", "NaN", "Infinity"])
def test_non_finite_latency_is_422(client, raw_value):
    raw = '{"latency_ms": %s, "messages": [{"role": "user", "content": "x"}]}' % raw_value
    response = send(client, "/v1/interactions", raw)
    assert response.status_code == 422 and "latency_ms" in response.json()["error"]


def test_non_finite_rating_is_422(client):
    response = send(client, "/v1/feedback", '{"external_id": "run-1", "rating": 1e999, "scale": "scale_0_10"}')
    assert response.status_code == 422 and "rating" in response.json()["error"]


def test_l1_score_event_without_an_id_is_4xx(client):
    response = send(client, "/v1/feedback", json.dumps({"rating": 1, "user_id": "u1"}))
    assert response.status_code == 422 and "exactly one of" in response.json()["error"]


def test_l2_lone_surrogates_are_replaced_with_a_warning(store, client, caplog):
    raw = ('{"messages": [{"role": "user", "content": "cheers \\ud83c\\udf7a and \\ud83c alone"}, '
           '{"role": "assistant", "content": "ok", "tool_calls": [{"args": {"drink": "\\udf78"}}]}]}')
    with caplog.at_level("WARNING"):
        response = send(client, "/v1/interactions", raw)
    assert response.status_code == 201, response.text
    assert "U+FFFD" in caplog.text
    with sessions(store[0], upgrade=False)() as s:
        messages = s.query(ChatMessage).filter(ChatMessage.interaction_id == response.json()["id"]).all()
    assert messages[0].content == "cheers \U0001f37a and \ufffd alone"
    assert json.loads(messages[1].tool_calls) == [{"args": {"drink": "\ufffd"}}]


def test_l2_size_limit_refuses_a_huge_answer_with_413(client):
    body = {"external_id": "big", "messages": [{"role": "user", "content": "q"},
                                               {"role": "assistant", "content": "a" * 4_300_000}]}
    response = send(client, "/v1/interactions", json.dumps(body))
    assert response.status_code == 413 and "max_body_bytes" in response.json()["error"]


def test_docs_open_by_default_with_field_descriptions(client):
    assert client.get("/docs").status_code == 200
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    for model in ("InteractionIn", "FeedbackIn", "CorrectionIn", "MessageIn"):
        assert all(p.get("description") for p in schema[model]["properties"].values()), model


def test_docs_behind_a_key_or_off(store):
    keyed = make_client(store, docs="key")
    assert keyed.get("/docs").status_code == 404
    assert keyed.get("/openapi.json", headers={"X-API-Key": ""}).status_code == 401
    assert "/v1/interactions" in keyed.get("/openapi.json").json()["paths"]
    off = make_client(store, docs="off")
    assert off.get("/docs").status_code == 404 and off.get("/openapi.json").status_code == 404


def test_settings_from_environment():
    settings = CollectorSettings.from_env({"TUNELOOP_COLLECTOR_DOCS": "off", "TUNELOOP_COLLECTOR_MAX_BODY_BYTES": "5000"})
    assert settings.docs == "off" and settings.max_body_bytes == 5000


def test_nothing_half_written_after_refusals(store, client):
    send(client, "/v1/interactions", json.dumps({"messages": [{"role": "user", "content": "x" * 2_000_000}]}))
    with sessions(store[0], upgrade=False)() as s:
        assert s.query(Interaction).count() == 1  # the fixture's interaction only


# -- the SQL source's filter ----------------------------------------------------------------


@pytest.mark.parametrize("bad, words", [
    ("1=1; DROP TABLE chat_feedback", "';'"),
    ("app = 'x'; SELECT 1", "';'"),
    ("app IN (SELECT name FROM api_keys)", "reaches beyond the table"),
    ("EXISTS (SELECT 1 FROM secrets)", "reaches beyond the table"),
    ("1=1 UNION SELECT password FROM users", "not a statement"),
    ("pg_read_file('/etc/passwd') = ''", "pg_read_file"),
])
def test_filter_that_reaches_other_tables_is_a_config_error(tmp_path, bad, words):
    with pytest.raises(ConfigError) as err:
        SqlFeedbackSource({"url": "postgresql://reader@db/prod", "table": "chat_feedback", "filter": bad}, tmp_path, "d")
    assert words in str(err.value) and "trusted configuration" in str(err.value)


@pytest.mark.parametrize("good", ["app = 'ledger-assistant'", "rating IS NOT NULL AND lower(app) LIKE 'sup%'",
                                  "created_at >= '2026-01-01' OR id BETWEEN 1 AND 10"])
def test_plain_conditions_pass_the_filter_check(tmp_path, good):
    source = SqlFeedbackSource({"url": "sqlite:///x.db", "table": "chat_feedback", "filter": good}, tmp_path, "d")
    assert source.options.filter == good
