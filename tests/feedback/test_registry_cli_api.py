"""`tuneloop adapters ...` and the registry API: register a real folder, promote, refuse, roll back."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from feedback.service import create_app
from feedback.store import create_api_key, sessions
from sdk.run.cli import app as cli
from sdk.run.lineage import Lineage, write_lineage
from tests.serve.lora_fixtures import make_adapter


@pytest.fixture(scope="module")
def folders(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("reg")
    out = []
    for i, (gate, reasons) in enumerate([(True, ()), (True, ()), (False, ("held-out pass@1 fell by 0.10",))]):
        path = make_adapter(tiny_model_dir, root / f"a{i}", seed=10 + i)
        write_lineage(path, Lineage(stage="sft", base_model=tiny_model_dir, taskset_version=f"ts{i}",
                                    promotable=gate, gate_reasons=reasons, heldout_pass_at_1={"base": 0.1, "tuned": 0.2}))
        out.append(path)
    return out


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        return url, create_api_key(s, "bot"), create_api_key(s, "other")


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_cli_register_list_show_diff_promote_rollback(store, folders, tiny_model_dir):
    url = store[0]
    common = ["--app", "bot", "--url", url]
    for i, f in enumerate(folders):
        code, out = run("adapters", "register", str(f), "--name", "support", *common, "--watermark", str(10 * i),
                        "--by", "ann", "--no-probe")
        assert code == 0 and f"registered support@{i + 1}" in out, out
    code, out = run("adapters", "list", *common, "--json")
    listed = json.loads(out)
    assert [v["label"] for v in listed] == ["support@1", "support@2", "support@3"]
    assert listed[0]["taskset_version"] == "ts0" and listed[0]["base_model"] == tiny_model_dir
    assert listed[2]["gate_passed"] is False and len(listed[0]["base_model_sha256"]) == 64
    code, out = run("adapters", "diff", "support", "1", "2", *common)
    assert "feedback_watermark: 0 -> 10" in out and "taskset_version: 'ts0' -> 'ts1'" in out
    code, out = run("adapters", "promote", "support", "3", *common, "--reason", "try")
    assert code == 3 and "held-out pass@1 fell by 0.10" in out
    code, out = run("adapters", "promote", "support", "7", *common, "--reason", "try")
    assert code == 2 and "no version support@7 (registered: @1, @2, @3)" in out
    code, out = run("adapters", "rollback", "support", *common, "--reason", "x")
    assert code == 2 and "no production version" in out
    assert run("adapters", "promote", "support", "1", *common, "--reason", "first", "--by", "ann")[0] == 0
    code, out = run("adapters", "rollback", "support", *common, "--reason", "x")
    assert code == 2 and "no earlier one to roll back to" in out
    assert run("adapters", "promote", "support", "2", *common, "--reason", "better")[0] == 0
    code, out = run("adapters", "rollback", "support", *common, "--reason", "complaints", "--by", "bob")
    assert code == 0 and "support@1 is production again" in out
    code, out = run("adapters", "show", "support", "production", *common, "--json")
    shown = json.loads(out)
    assert shown["number"] == 1 and [a["action"] for a in shown["audit"]] == ["register", "promote", "retire", "rollback"]
    assert shown["audit"][-1]["by"] == "bob" and shown["audit"][-1]["why"] == "complaints"


def test_api_is_scoped_to_the_key_application(store, folders):
    from feedback.registration import registration_from_folder
    from feedback.registry import register

    url, key, other = store
    with sessions(url)() as s:
        for f in folders[:2]:
            register(s, "bot", "support", registration_from_folder(f), actor="ann")
    client = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": key})
    stranger = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": other})
    assert [v["label"] for v in client.get("/v1/adapters").json()] == ["support@1", "support@2"]
    assert stranger.get("/v1/adapters").json() == []
    r = stranger.post("/v1/adapters/support/promote", json={"version": 1, "reason": "hijack"})
    assert r.status_code == 404 and "no version support@1 (registered: none)" in r.json()["error"]
    assert client.get("/v1/adapters", headers={"X-API-Key": "nope"}).status_code == 401
    r = client.post("/v1/adapters/support/promote", json={"version": 1, "reason": "first", "by": "ann"})
    assert r.status_code == 200 and r.json()["state"] == "production"
    r = client.post("/v1/adapters/support/promote", json={"version": 2, "reason": "try", "canary_fraction": 0.2,
                                                        "rule": {"min_samples": 5, "max_drop": 0.1}})
    assert r.status_code == 200 and r.json()["state"] == "canary"
    routes = client.get("/v1/routes").json()
    assert routes["names"] == [{"name": "support", "production": 1, "canary": 2, "canary_fraction": 0.2}]
    events = client.get("/v1/adapters/support/events").json()
    assert events[-1]["actor"].startswith("api (key tl_") and events[-1]["details"]["rule"]["min_samples"] == 5
    assert client.get("/v1/adapters/support/diff", params={"a": 1, "b": 2}).json()["adapter_sha256"]
    r = client.post("/v1/adapters/support/rollback", json={"reason": "no", "canary": True})
    assert r.status_code == 200 and r.json()["state"] == "retired"
    assert "support@2" in client.get("/v1/adapters/support/canary").text
