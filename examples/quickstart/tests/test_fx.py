"""Tests for acme_ledger.fx (foreign exchange): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.fx import convert
from acme_ledger.fx import invert_rate
from acme_ledger.fx import is_currency_code
from acme_ledger.fx import pair_code
from acme_ledger.fx import parse_pair
from acme_ledger.fx import spread_bp
from acme_ledger.fx import mid_rate
from acme_ledger.fx import best_rate
from acme_ledger.fx import fx_fee
from acme_ledger.fx import rate_change_pct
from acme_ledger.fx import within_band


def test_convert_rate():
    r = convert(Money(1000), 10850)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1085)


def test_convert_rounds_down():
    r = convert(Money(999), 5000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(499)


def test_convert_zero_rate():
    r = convert(Money(1000), 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_invert_rate_half():
    r = invert_rate(20000)
    assert isinstance(r, Result) and r.ok
    assert r.value == 5000


def test_invert_rate_rounds_down():
    r = invert_rate(30000)
    assert isinstance(r, Result) and r.ok
    assert r.value == 3333


def test_invert_rate_zero():
    r = invert_rate(0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_is_currency_code_eur():
    r = is_currency_code('EUR')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_currency_code_lower():
    r = is_currency_code('eur')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_currency_code_too_long():
    r = is_currency_code('EURO')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_pair_code_eur_usd():
    r = pair_code('EUR', 'USD')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'EUR/USD'


def test_pair_code_gbp_jpy():
    r = pair_code('GBP', 'JPY')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'GBP/JPY'


def test_pair_code_bad_code():
    r = pair_code('EURO', 'USD')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_parse_pair_eur_usd():
    r = parse_pair('EUR/USD')
    assert isinstance(r, Result) and r.ok
    assert r.value == ('EUR', 'USD')


def test_parse_pair_gbp_chf():
    r = parse_pair('GBP/CHF')
    assert isinstance(r, Result) and r.ok
    assert r.value == ('GBP', 'CHF')


def test_parse_pair_no_slash():
    r = parse_pair('EURUSD')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_spread_bp_positive():
    r = spread_bp(10840, 10860)
    assert isinstance(r, Result) and r.ok
    assert r.value == 20


def test_spread_bp_zero():
    r = spread_bp(10850, 10850)
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_spread_bp_crossed():
    r = spread_bp(10860, 10840)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_mid_rate_even():
    r = mid_rate(10840, 10860)
    assert isinstance(r, Result) and r.ok
    assert r.value == 10850


def test_mid_rate_rounds_down():
    r = mid_rate(10001, 10002)
    assert isinstance(r, Result) and r.ok
    assert r.value == 10001


def test_mid_rate_same():
    r = mid_rate(9000, 9000)
    assert isinstance(r, Result) and r.ok
    assert r.value == 9000


def test_best_rate_highest():
    r = best_rate({'EUR': 10850, 'GBP': 12700, 'JPY': 67})
    assert isinstance(r, Result) and r.ok
    assert r.value == 'GBP'


def test_best_rate_single():
    r = best_rate({'CHF': 11300})
    assert isinstance(r, Result) and r.ok
    assert r.value == 'CHF'


def test_best_rate_empty():
    r = best_rate({})
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_fx_fee_one_percent():
    r = fx_fee(Money(50000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(500)


def test_fx_fee_minimum():
    r = fx_fee(Money(2000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(100)


def test_fx_fee_rounds_down():
    r = fx_fee(Money(12345))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(123)


def test_rate_change_pct_up():
    r = rate_change_pct(10000, 11000)
    assert isinstance(r, Result) and r.ok
    assert r.value == 10


def test_rate_change_pct_down():
    r = rate_change_pct(10000, 9500)
    assert isinstance(r, Result) and r.ok
    assert r.value == -5


def test_rate_change_pct_zero_old():
    r = rate_change_pct(0, 9500)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_within_band_inside():
    r = within_band(10850, 10800, 10900)
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_within_band_edge():
    r = within_band(10900, 10800, 10900)
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_within_band_bad_band():
    r = within_band(10850, 10900, 10800)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID
