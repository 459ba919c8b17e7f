"""Tests for acme_ledger.payroll (pay and deductions): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.payroll import hourly_pay
from acme_ledger.payroll import overtime_pay
from acme_ledger.payroll import gross_weekly
from acme_ledger.payroll import annual_to_monthly
from acme_ledger.payroll import pension_contribution
from acme_ledger.payroll import net_pay
from acme_ledger.payroll import bonus_share
from acme_ledger.payroll import prorate_salary
from acme_ledger.payroll import payslip_line
from acme_ledger.payroll import vacation_days


def test_hourly_pay_full_day():
    r = hourly_pay(Money(2000), 8)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(16000)


def test_hourly_pay_with_minutes():
    r = hourly_pay(Money(1000), 1, 45)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1750)


def test_hourly_pay_bad_minutes():
    r = hourly_pay(Money(1000), 1, 60)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_hourly_pay_negative():
    r = hourly_pay(Money(2000), -1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_overtime_pay_above_threshold():
    r = overtime_pay(Money(1000), 45)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(7500)


def test_overtime_pay_below_threshold():
    r = overtime_pay(Money(1000), 30)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_overtime_pay_custom_threshold():
    r = overtime_pay(Money(1001), 38, threshold=37)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1501)


def test_gross_weekly_with_overtime():
    r = gross_weekly(Money(1000), 42)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(43000)


def test_gross_weekly_part_time():
    r = gross_weekly(Money(1500), 20)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(30000)


def test_gross_weekly_negative():
    r = gross_weekly(Money(1500), -3)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_annual_to_monthly_even():
    r = annual_to_monthly(Money(1200000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(100000)


def test_annual_to_monthly_rounds_down():
    r = annual_to_monthly(Money(1000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(83)


def test_annual_to_monthly_negative():
    r = annual_to_monthly(Money(-12))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_pension_contribution_five_percent():
    r = pension_contribution(Money(300000), 500)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(15000)


def test_pension_contribution_rounds_down():
    r = pension_contribution(Money(999), 333)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(33)


def test_pension_contribution_rate_too_high():
    r = pension_contribution(Money(999), 2001)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_net_pay_two_deductions():
    r = net_pay(Money(500000), [Money(100000), Money(25000)])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(375000)


def test_net_pay_no_deductions():
    r = net_pay(Money(4200), [])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(4200)


def test_net_pay_too_much():
    r = net_pay(Money(100), [Money(60), Money(41)])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_bonus_share_proportional():
    r = bonus_share(Money(10000), {'ann': 3, 'bob': 1}, 'ann')
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(7500)


def test_bonus_share_missing():
    r = bonus_share(Money(10000), {'ann': 3}, 'cy')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_bonus_share_all_zero():
    r = bonus_share(Money(10000), {'ann': 0, 'bob': 0}, 'bob')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_prorate_salary_half_month():
    r = prorate_salary(Money(300000), 15, 30)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(150000)


def test_prorate_salary_rounds_down():
    r = prorate_salary(Money(1000), 1, 31)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(32)


def test_prorate_salary_too_many_days():
    r = prorate_salary(Money(1000), 32, 31)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_payslip_line_formats():
    r = payslip_line('  Base pay ', Money(123450))
    assert isinstance(r, Result) and r.ok
    assert r.value == 'Base pay: 1234.50'


def test_payslip_line_small():
    r = payslip_line('Tax', Money(7))
    assert isinstance(r, Result) and r.ok
    assert r.value == 'Tax: 0.07'


def test_payslip_line_blank_label():
    r = payslip_line('  ', Money(7))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_vacation_days_new_hire():
    r = vacation_days(3)
    assert isinstance(r, Result) and r.ok
    assert r.value == 6


def test_vacation_days_capped():
    r = vacation_days(40)
    assert isinstance(r, Result) and r.ok
    assert r.value == 25


def test_vacation_days_negative():
    r = vacation_days(-1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE
