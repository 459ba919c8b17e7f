"""`tuneloop export` without the run's --set options (new-user trial): the refusal names the settings that
differ for the adapter's stage and each stale stage above it, as the stage refusals do, instead of "its
config or an earlier stage changed"."""
from types import SimpleNamespace

import pytest

from sdk.errors import ConfigError
from sdk.run.bookkeeping import StageStats, write_marker
from sdk.run.release import check_release
from sdk.run.spec import Stage


def test_a_stale_adapter_names_the_settings_that_differ(tmp_path, monkeypatch):
    adapter = tmp_path / "rl" / "adapter"
    adapter.mkdir(parents=True)
    write_marker(tmp_path / "rl.json", "f", StageStats("rl"), {"rl": {"max_steps": 2}})
    layout = SimpleNamespace(root=tmp_path, marker=lambda name: tmp_path / f"{name}.json")
    seen = []
    pipe = SimpleNamespace(
        cfg=SimpleNamespace(), layout=layout, run_dir=tmp_path, is_complete=lambda stage: False,
        adapter_for_eval=lambda: adapter,
        _why_changed=lambda stage, marker: seen.append((stage, marker["inputs"])) or "changed since it ran (rl.max_steps 2 → 10)",
        stale_inputs=lambda stage: [(Stage.SFT, "changed since it ran (sft.max_steps 4 → -1)")])
    monkeypatch.setattr("sdk.run.release.newest_adapter", lambda cfg, layout: adapter)
    with pytest.raises(ConfigError) as err:
        check_release(pipe)
    assert err.value.what.endswith("is out of date: rl changed since it ran (rl.max_steps 2 → 10); "
                                   "sft changed since it ran (sft.max_steps 4 → -1)")
    assert seen == [(Stage.RL, {"rl": {"max_steps": 2}})]


def _fresh_pipe(tmp_path, monkeypatch, heldout: dict, promotable):
    adapter = tmp_path / "sft" / "adapter"
    adapter.mkdir(parents=True)
    pipe = SimpleNamespace(cfg=SimpleNamespace(gate=SimpleNamespace(enabled=promotable is not None)), run_dir=tmp_path,
                           layout=SimpleNamespace(root=tmp_path), is_complete=lambda stage: True,
                           adapter_for_eval=lambda: adapter)
    monkeypatch.setattr("sdk.run.release.newest_adapter", lambda cfg, layout: adapter)
    lineage = SimpleNamespace(promotable=promotable, gate_reasons=(), heldout_pass_at_1=heldout)
    monkeypatch.setattr("sdk.run.release.read_lineage", lambda path: lineage)
    return pipe


@pytest.mark.parametrize("heldout, warned", [({"base": 0.0, "tuned": 0.0}, True), ({"base": 0.2, "tuned": 0.1}, True),
                                             ({"base": 0.0, "tuned": 0.05}, False), ({}, False)])
def test_an_ungated_adapter_without_a_heldout_gain_is_released_with_a_warning(tmp_path, monkeypatch, heldout, warned):
    _, record = check_release(_fresh_pipe(tmp_path, monkeypatch, heldout, None))
    assert ("warning" in record) is warned
    if warned:
        assert "no held-out gain" in record["warning"] and "gate.enabled: true" in record["warning"]
    assert record["gate"] == "not applied"


def test_a_gate_that_passed_the_adapter_adds_no_warning(tmp_path, monkeypatch):
    _, record = check_release(_fresh_pipe(tmp_path, monkeypatch, {"base": 0.1, "tuned": 0.1}, True))
    assert "warning" not in record and record["gate"] == "passed"
