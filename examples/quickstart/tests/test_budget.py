"""Tests for acme_ledger.budget (departmental budgets): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.budget import remaining_budget
from acme_ledger.budget import utilisation_pct
from acme_ledger.budget import variance
from acme_ledger.budget import over_budget
from acme_ledger.budget import allocate
from acme_ledger.budget import monthly_run_rate
from acme_ledger.budget import forecast_year_end
from acme_ledger.budget import approve_expense
from acme_ledger.budget import largest_spender
from acme_ledger.budget import budget_code


def test_remaining_budget_left():
    r = remaining_budget(Money(100000), Money(25000), Money(5000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(70000)


def test_remaining_budget_exact():
    r = remaining_budget(Money(500), Money(300), Money(200))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_remaining_budget_overcommitted():
    r = remaining_budget(Money(500), Money(300), Money(201))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_utilisation_pct_quarter():
    r = utilisation_pct(Money(40000), Money(10000))
    assert isinstance(r, Result) and r.ok
    assert r.value == 25


def test_utilisation_pct_rounds_down():
    r = utilisation_pct(Money(300), Money(200))
    assert isinstance(r, Result) and r.ok
    assert r.value == 66


def test_utilisation_pct_zero_budget():
    r = utilisation_pct(Money(0), Money(200))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_variance_over():
    r = variance(Money(1000), Money(1250))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(250)


def test_variance_under():
    r = variance(Money(1000), Money(400))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(-600)


def test_variance_on_plan():
    r = variance(Money(1000), Money(1000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_over_budget_sorted():
    r = over_budget({'ops': Money(100), 'hr': Money(50), 'it': Money(10)}, {'ops': Money(150), 'hr': Money(80)})
    assert isinstance(r, Result) and r.ok
    assert r.value == ['hr', 'ops']


def test_over_budget_none():
    r = over_budget({'ops': Money(100)}, {'ops': Money(100)})
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_over_budget_missing_spend():
    r = over_budget({'ops': Money(100)}, {})
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_allocate_by_weight():
    r = allocate(Money(1000), {'ops': 3, 'hr': 1})
    assert isinstance(r, Result) and r.ok
    assert r.value == {'ops': Money(750), 'hr': Money(250)}


def test_allocate_leftover_to_first():
    r = allocate(Money(100), {'b': 1, 'a': 1, 'c': 1})
    assert isinstance(r, Result) and r.ok
    assert r.value == {'b': Money(33), 'a': Money(34), 'c': Money(33)}


def test_allocate_no_weights():
    r = allocate(Money(100), {})
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_monthly_run_rate_average():
    r = monthly_run_rate(Money(90000), 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(30000)


def test_monthly_run_rate_zero_months():
    r = monthly_run_rate(Money(90000), 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_monthly_run_rate_negative():
    r = monthly_run_rate(Money(90000), -2)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_forecast_year_end_quarter():
    r = forecast_year_end(Money(30000), 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(120000)


def test_forecast_year_end_rounds_down():
    r = forecast_year_end(Money(1000), 7)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1714)


def test_forecast_year_end_bad_month():
    r = forecast_year_end(Money(1000), 13)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_approve_expense_fits():
    r = approve_expense(Money(5000), Money(2000), Money(3000))
    assert isinstance(r, Result) and r.ok
    assert r.value == True


def test_approve_expense_over_limit():
    r = approve_expense(Money(5000), Money(4000), Money(3000))
    assert isinstance(r, Result) and r.ok
    assert r.value == False


def test_approve_expense_zero():
    r = approve_expense(Money(5000), Money(0), Money(3000))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_largest_spender_max():
    r = largest_spender({'ops': Money(10), 'hr': Money(30)})
    assert isinstance(r, Result) and r.ok
    assert r.value == 'hr'


def test_largest_spender_tie_by_name():
    r = largest_spender({'it': Money(30), 'hr': Money(30)})
    assert isinstance(r, Result) and r.ok
    assert r.value == 'hr'


def test_largest_spender_empty():
    r = largest_spender({})
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_budget_code_formats():
    r = budget_code('marketing', 2025)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'BUD-MAR-2025'


def test_budget_code_letters_only():
    r = budget_code('r&d ops', 2030)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'BUD-RDO-2030'


def test_budget_code_bad_year():
    r = budget_code('finance', 1999)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID
