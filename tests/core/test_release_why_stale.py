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
