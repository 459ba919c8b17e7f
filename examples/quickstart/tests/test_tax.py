"""Tests for acme_ledger.tax (tax): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.tax import vat_amount
from acme_ledger.tax import gross_from_net
from acme_ledger.tax import net_from_gross
from acme_ledger.tax import rate_from_percent
from acme_ledger.tax import is_tax_exempt
from acme_ledger.tax import withholding
from acme_ledger.tax import tax_bracket
from acme_ledger.tax import tax_on_total
from acme_ledger.tax import vat_rate_for
from acme_ledger.tax import tax_refund
from acme_ledger.tax import effective_rate_bp


def test_vat_amount_twenty_percent():
    r = vat_amount(Money(1000), 2000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(200)


def test_vat_amount_rounds_down():
    r = vat_amount(Money(999), 1900)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(189)


def test_vat_amount_negative_rate():
    r = vat_amount(Money(1000), -1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_gross_from_net_twenty_percent():
    r = gross_from_net(Money(1000), 2000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1200)


def test_gross_from_net_rounds_tax_down():
    r = gross_from_net(Money(999), 1900)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1188)


def test_gross_from_net_zero_rate():
    r = gross_from_net(Money(500), 0)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(500)


def test_net_from_gross_twenty_percent():
    r = net_from_gross(Money(1200), 2000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1000)


def test_net_from_gross_rounds_down():
    r = net_from_gross(Money(1000), 2000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(833)


def test_net_from_gross_zero_rate():
    r = net_from_gross(Money(500), 0)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(500)


def test_rate_from_percent_twenty():
    r = rate_from_percent(20)
    assert isinstance(r, Result) and r.ok
    assert r.value == 2000


def test_rate_from_percent_zero():
    r = rate_from_percent(0)
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_rate_from_percent_over_100():
    r = rate_from_percent(150)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_is_tax_exempt_ex():
    r = is_tax_exempt('EX')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_tax_exempt_nt():
    r = is_tax_exempt('NT')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_tax_exempt_standard():
    r = is_tax_exempt('S')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_withholding_round():
    r = withholding(Money(1000))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(150)


def test_withholding_rounds_down():
    r = withholding(Money(999))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(149)


def test_withholding_zero():
    r = withholding(Money(0))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_tax_bracket_low():
    r = tax_bracket(Money(999_999))
    assert isinstance(r, Result) and r.ok
    assert r.value == 1


def test_tax_bracket_high():
    r = tax_bracket(Money(1_000_000))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2


def test_tax_bracket_negative():
    r = tax_bracket(Money(-1))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_tax_on_total_two():
    r = tax_on_total([Money(500), Money(500)], 2000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(200)


def test_tax_on_total_rounds_down():
    r = tax_on_total([Money(333)], 1000)
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(33)


def test_tax_on_total_empty():
    r = tax_on_total([], 2000)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_vat_rate_for_germany():
    r = vat_rate_for('DE')
    assert isinstance(r, Result) and r.ok
    assert r.value == 1900


def test_vat_rate_for_france():
    r = vat_rate_for('FR')
    assert isinstance(r, Result) and r.ok
    assert r.value == 2000


def test_vat_rate_for_unknown():
    r = vat_rate_for('XX')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_tax_refund_overpaid():
    r = tax_refund(Money(500), Money(300))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(200)


def test_tax_refund_exact():
    r = tax_refund(Money(300), Money(300))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_tax_refund_underpaid():
    r = tax_refund(Money(100), Money(300))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_effective_rate_bp_twenty_percent():
    r = effective_rate_bp(Money(200), Money(1000))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2000


def test_effective_rate_bp_rounds_down():
    r = effective_rate_bp(Money(1), Money(3))
    assert isinstance(r, Result) and r.ok
    assert r.value == 3333


def test_effective_rate_bp_zero_net():
    r = effective_rate_bp(Money(5), Money(0))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO
