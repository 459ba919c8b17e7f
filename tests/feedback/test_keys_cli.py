"""Issue 20.5: keys can be listed and revoked from the CLI, and a wrong key's fix names the CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from feedback.cli import app
from feedback.store import new_api_key


def test_keys_list_and_revoke(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    key = new_api_key(url, "support-bot")
    other = new_api_key(url, "search")
    listed = CliRunner().invoke(app, ["keys", "list", "--url", url, "--json"])
    assert listed.exit_code == 0
    keys = json.loads(listed.stdout)
    assert [(k["application"], k["prefix"], k["revoked_at"]) for k in keys] == [
        ("support-bot", key[:8], None), ("search", other[:8], None)]
    assert CliRunner().invoke(app, ["keys", "revoke", "tl_", "--url", url]).exit_code == 2, "ambiguous prefix"
    assert CliRunner().invoke(app, ["keys", "revoke", key[:8], "--url", url]).exit_code == 0
    after = json.loads(CliRunner().invoke(app, ["keys", "list", "--url", url, "--json"]).stdout)
    assert after[0]["revoked_at"] and after[1]["revoked_at"] is None


def test_a_revoked_key_is_refused_with_a_cli_fix(tmp_path):
    from fastapi.testclient import TestClient

    from feedback.keys import revoke_key
    from feedback.service import create_app

    url = f"sqlite:///{tmp_path / 'store.db'}"
    key = new_api_key(url, "bot")
    revoke_key(url, key[:8])
    res = TestClient(create_app(url)).get("/v1/feedback", headers={"X-API-Key": key})
    assert res.status_code == 401 and "tuneloop feedback create-key" in res.json()["fix"]


def test_a_misspelt_application_is_an_error_naming_the_real_ones(tmp_path):
    """Issue 20.5: a wrong `application:` read 0 rows and exited 0 silently."""
    import pytest

    from connectors.feedback_tables.collector import CollectorFeedbackSource
    from sdk.errors import SourceError

    url = f"sqlite:///{tmp_path / 'store.db'}"
    new_api_key(url, "support-bot")
    with pytest.raises(SourceError, match=r"no application 'suport-bot'.*") as err:
        CollectorFeedbackSource({"url": url, "application": "suport-bot"}, tmp_path, "fb").read()
    assert "support-bot" in err.value.fix


def test_created_at_comes_back_with_a_time_zone(tmp_path):
    from fastapi.testclient import TestClient

    from feedback.service import create_app

    url = f"sqlite:///{tmp_path / 'store.db'}"
    key = new_api_key(url, "bot")
    client = TestClient(create_app(url), headers={"X-API-Key": key})
    client.post("/v1/interactions", json={"external_id": "r1", "messages": [{"role": "user", "content": "hi"}]},
                headers={"Idempotency-Key": "i1"})
    client.post("/v1/feedback", json={"external_id": "r1", "rating": 1}, headers={"Idempotency-Key": "f1"})
    (item,) = client.get("/v1/feedback").json()["items"]
    assert item["created_at"].endswith("+00:00") or item["created_at"].endswith("Z")


def test_a_busy_port_is_one_clear_error():
    import socket

    import pytest

    from feedback.service import serve

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(SystemExit, match="cannot listen on 127.0.0.1"):
            serve("sqlite:///:memory:", port=port)
