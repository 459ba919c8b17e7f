"""The regression gate passes and fails on the right comparisons."""

import pytest

from sdk.config import GateConfig
from sdk.errors import GateError
from sdk.eval.gate import check_gate
from sdk.eval.records import EvalRow
from sdk.eval.run import compare
from sdk.tasks.records import Split


def rows(model, outcomes, split=Split.HELDOUT, start=0):
    """outcomes: '1' pass, '0' fail, '-' unjudged; one greedy sample per task."""
    return [EvalRow(task_id=f"{split.value}{i}", domain="python/x", split=split, model=model, completions=("c",),
                    rewards=(None if o == "-" else float(o),), passed=(o == "1",),
                    statuses=({"1": "ok", "0": "failed", "-": "sandbox_error"}[o],), flags=((),))
            for i, o in enumerate(outcomes, start)]


def cmp(base_held, tuned_held, base_ood="", tuned_ood="", base_train="", tuned_train=""):
    base = rows("base", base_held) + rows("base", base_ood, Split.OOD) + rows("base", base_train, Split.TRAIN)
    tuned = rows("tuned", tuned_held) + rows("tuned", tuned_ood, Split.OOD) + rows("tuned", tuned_train, Split.TRAIN)
    return compare(base, tuned, n_resamples=200)


def test_gate_passes_on_gain_without_regressions():
    res = check_gate(GateConfig(enabled=True, max_regressions=0, min_heldout_gain=0.2),
                     cmp("0000111100", "1111111100", "10", "10"))
    assert res.passed and res.reasons == ()
    assert res.heldout_gain == pytest.approx(0.4) and res.regressions == 0
    res.raise_if_failed()  # does not raise


def test_gate_fails_on_an_ood_regression_and_names_it():
    c = cmp("0000111100", "1111111100", "10", "00")
    res = check_gate(GateConfig(enabled=True, max_regressions=0), c)
    assert not res.passed and res.regressions == 1
    assert "1 held-out/OOD regressions" in res.reasons[0] and "ood0" in res.reasons[0]
    with pytest.raises(GateError, match="regression gate refused") as exc:
        res.raise_if_failed()
    assert exc.value.exit_code == 3 and exc.value.fix
    assert check_gate(GateConfig(enabled=True, max_regressions=1), c).passed


def test_gate_ignores_train_regressions():
    res = check_gate(GateConfig(enabled=True), cmp("01", "11", base_train="11", tuned_train="00"))
    assert res.passed and res.regressions == 0


def test_gate_fails_when_gain_is_too_small():
    res = check_gate(GateConfig(enabled=True, min_heldout_gain=0.5), cmp("0000111100", "1100111100"))
    assert not res.passed and res.heldout_gain == pytest.approx(0.2)
    assert "below the required +0.500" in res.reasons[0]


def test_gate_fails_without_heldout_tasks():
    res = check_gate(GateConfig(enabled=True), cmp("", "", "1", "1"))
    assert not res.passed and "no held-out task" in res.reasons[0] and res.heldout_gain is None


def test_disabled_gate_passes_but_reports_reasons():
    res = check_gate(GateConfig(enabled=False), cmp("11", "00"))
    assert res.passed and not res.enabled and res.regressions == 2 and len(res.reasons) == 2
    res.raise_if_failed()


def test_unjudged_tasks_are_noted_not_counted():
    res = check_gate(GateConfig(enabled=True), cmp("10", "1-"))
    assert res.passed and res.regressions == 0
    assert any("could not be judged" in n for n in res.notes)
