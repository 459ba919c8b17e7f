"""Tests for acme_ledger.dates (calendar helpers): value and house conventions (Result, ok/err, Money)."""

from datetime import date

from acme_ledger.core import ErrorCode, Result
from acme_ledger.dates import parse_iso_date
from acme_ledger.dates import days_between
from acme_ledger.dates import add_days
from acme_ledger.dates import is_weekend
from acme_ledger.dates import month_start
from acme_ledger.dates import quarter_of
from acme_ledger.dates import format_date_us
from acme_ledger.dates import due_date
from acme_ledger.dates import is_overdue
from acme_ledger.dates import fiscal_year
from acme_ledger.dates import year_end


def test_parse_iso_date_valid():
    r = parse_iso_date('2024-05-01')
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 5, 1)


def test_parse_iso_date_leap_day():
    r = parse_iso_date('2024-02-29')
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 2, 29)


def test_parse_iso_date_not_a_date():
    r = parse_iso_date('01/05/2024')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_days_between_same_month():
    r = days_between(date(2024, 1, 1), date(2024, 1, 31))
    assert isinstance(r, Result) and r.ok
    assert r.value == 30


def test_days_between_same_day():
    r = days_between(date(2024, 3, 3), date(2024, 3, 3))
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_days_between_backwards():
    r = days_between(date(2024, 3, 3), date(2024, 3, 1))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_add_days_within_month():
    r = add_days(date(2024, 1, 10), 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 1, 15)


def test_add_days_across_year():
    r = add_days(date(2023, 12, 30), 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 1, 2)


def test_add_days_negative():
    r = add_days(date(2024, 1, 10), -1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_is_weekend_saturday():
    r = is_weekend(date(2024, 6, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_weekend_sunday():
    r = is_weekend(date(2024, 6, 2))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_weekend_monday():
    r = is_weekend(date(2024, 6, 3))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_month_start_mid_month():
    r = month_start(date(2024, 7, 19))
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 7, 1)


def test_month_start_already_first():
    r = month_start(date(2024, 2, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 2, 1)


def test_month_start_end_of_year():
    r = month_start(date(2023, 12, 31))
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2023, 12, 1)


def test_quarter_of_january():
    r = quarter_of(date(2024, 1, 15))
    assert isinstance(r, Result) and r.ok
    assert r.value == 1


def test_quarter_of_june():
    r = quarter_of(date(2024, 6, 30))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2


def test_quarter_of_october():
    r = quarter_of(date(2024, 10, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value == 4


def test_format_date_us_pads():
    r = format_date_us(date(2024, 5, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value == '05/01/2024'


def test_format_date_us_two_digit():
    r = format_date_us(date(2023, 12, 25))
    assert isinstance(r, Result) and r.ok
    assert r.value == '12/25/2023'


def test_format_date_us_leap_day():
    r = format_date_us(date(2024, 2, 29))
    assert isinstance(r, Result) and r.ok
    assert r.value == '02/29/2024'


def test_due_date_net_30():
    r = due_date(date(2024, 1, 1), 30)
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 1, 31)


def test_due_date_net_15():
    r = due_date(date(2024, 2, 20), 15)
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 3, 6)


def test_due_date_odd_terms():
    r = due_date(date(2024, 1, 1), 45)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_is_overdue_after():
    r = is_overdue(date(2024, 3, 1), date(2024, 3, 2))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_overdue_same_day():
    r = is_overdue(date(2024, 3, 1), date(2024, 3, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_overdue_before():
    r = is_overdue(date(2024, 3, 1), date(2024, 2, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_fiscal_year_march():
    r = fiscal_year(date(2024, 3, 31))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2023


def test_fiscal_year_april():
    r = fiscal_year(date(2024, 4, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2024


def test_fiscal_year_december():
    r = fiscal_year(date(2024, 12, 31))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2024


def test_year_end_mid_year():
    r = year_end(date(2024, 6, 15))
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2024, 12, 31)


def test_year_end_january():
    r = year_end(date(2023, 1, 1))
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2023, 12, 31)


def test_year_end_already_end():
    r = year_end(date(2022, 12, 31))
    assert isinstance(r, Result) and r.ok
    assert r.value == date(2022, 12, 31)
