"""``tuneloop feedback create-key`` prints a key the collector accepts."""

from __future__ import annotations

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from feedback.cli import app
from feedback.service import create_app


def test_create_key_then_use_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    result = CliRunner().invoke(app, ["create-key", "support-bot", "--url", url])
    assert result.exit_code == 0, result.output
    key = result.output.strip()
    client = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": key})
    assert client.get("/v1/feedback").status_code == 200
    assert TestClient(client.app, headers={"X-API-Key": key + "x"}).get("/v1/feedback").status_code == 401
