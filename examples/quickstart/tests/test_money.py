"""Tests for acme_ledger.money (Money arithmetic): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.money import add_cents
from acme_ledger.money import subtract_cents
from acme_ledger.money import scale_money
from acme_ledger.money import halve_money
from acme_ledger.money import money_from_units
from acme_ledger.money import money_to_text
from acme_ledger.money import is_zero_money
from acme_ledger.money import max_money
from acme_ledger.money import sum_money
from acme_ledger.money import percent_of
from acme_ledger.money import round_to_unit
from acme_ledger.money import split_evenly


def test_add_cents_sums():
    r = add_cents(Money(100), Money(50))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(150)


def test_add_cents_zero():
    r = add_cents(Money(0), Money(7))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(7)


def test_add_cents_negative_operand():
    r = add_cents(Money(500), Money(-200))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(300)


def test_subtract_cents_difference():
    r = subtract_cents(Money(500), Money(120))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(380)


def test_subtract_cents_equal():
    r = subtract_cents(Money(75), Money(75))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_subtract_cents_below_zero():
    r = subtract_cents(Money(10), Money(11))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_scale_money_triple():
    r = scale_money(Money(250), 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(750)


def test_scale_money_by_zero():
    r = scale_money(Money(250), 0)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_scale_money_negative_factor():
    r = scale_money(Money(250), -2)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_halve_money_even():
    r = halve_money(Money(1000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(500)


def test_halve_money_odd_rounds_down():
    r = halve_money(Money(7))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(3)


def test_halve_money_zero():
    r = halve_money(Money(0))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_money_from_units_units_and_cents():
    r = money_from_units(12, 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1205)


def test_money_from_units_whole():
    r = money_from_units(3, 0)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(300)


def test_money_from_units_cents_out_of_range():
    r = money_from_units(1, 100)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_money_to_text_pads_cents():
    r = money_to_text(Money(1205))
    assert isinstance(r, Result) and r.ok
    assert r.value == '12.05'


def test_money_to_text_small():
    r = money_to_text(Money(7))
    assert isinstance(r, Result) and r.ok
    assert r.value == '0.07'


def test_money_to_text_negative():
    r = money_to_text(Money(-1))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_is_zero_money_zero():
    r = is_zero_money(Money(0))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_zero_money_positive():
    r = is_zero_money(Money(1))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_zero_money_negative():
    r = is_zero_money(Money(-5))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_max_money_first():
    r = max_money(Money(900), Money(100))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(900)


def test_max_money_second():
    r = max_money(Money(100), Money(900))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(900)


def test_max_money_negatives():
    r = max_money(Money(-3), Money(-8))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(-3)


def test_sum_money_three():
    r = sum_money([Money(100), Money(250), Money(5)])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(355)


def test_sum_money_one():
    r = sum_money([Money(42)])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(42)


def test_sum_money_empty():
    r = sum_money([])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_percent_of_quarter():
    r = percent_of(Money(1000), 25)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(250)


def test_percent_of_rounds_down():
    r = percent_of(Money(999), 10)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(99)


def test_percent_of_over_100():
    r = percent_of(Money(1000), 101)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_round_to_unit_half_up():
    r = round_to_unit(Money(1250))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1300)


def test_round_to_unit_down():
    r = round_to_unit(Money(1249))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1200)


def test_round_to_unit_exact():
    r = round_to_unit(Money(700))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(700)


def test_split_evenly_three_parts():
    r = split_evenly(Money(900), 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(300)


def test_split_evenly_rounds_down():
    r = split_evenly(Money(100), 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(33)


def test_split_evenly_zero_parts():
    r = split_evenly(Money(100), 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO
