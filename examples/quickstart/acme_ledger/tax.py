"""Tax on Money amounts. Rates are integer basis points: 2000 is 20%."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok

_STANDARD_RATES = {"DE": 1900, "FR": 2000, "GB": 2000, "NL": 2100}


def vat_amount(net: Money, rate_bp: int) -> Result:
    """Tax on net at rate_bp, rounded down; NEGATIVE if rate_bp < 0."""
    if rate_bp < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(net.cents * rate_bp // 10000))


def gross_from_net(net: Money, rate_bp: int) -> Result:
    """net plus its tax at rate_bp (tax rounded down)."""
    return ok(Money(net.cents + net.cents * rate_bp // 10000))


def net_from_gross(gross: Money, rate_bp: int) -> Result:
    """The net part of a gross amount taxed at rate_bp, rounded down."""
    return ok(Money(gross.cents * 10000 // (10000 + rate_bp)))


def rate_from_percent(pct: int) -> Result:
    """A whole percent as basis points; INVALID unless 0 <= pct <= 100."""
    if not 0 <= pct <= 100:
        return err(ErrorCode.INVALID)
    return ok(pct * 100)


def is_tax_exempt(code: str) -> Result:
    """True if the tax code is 'EX' or 'NT'."""
    return ok(code in ("EX", "NT"))


def withholding(gross: Money) -> Result:
    """Flat 15% of gross withheld, rounded down."""
    return ok(Money(gross.cents * 15 // 100))


def tax_bracket(income: Money) -> Result:
    """1 below 10000.00, else 2; NEGATIVE if income < 0."""
    if income.cents < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(1 if income.cents < 1000000 else 2)


def tax_on_total(amounts: list[Money], rate_bp: int) -> Result:
    """Tax at rate_bp on the sum of amounts, rounded down; EMPTY if no amounts."""
    if not amounts:
        return err(ErrorCode.EMPTY)
    return ok(Money(sum(m.cents for m in amounts) * rate_bp // 10000))


def vat_rate_for(country: str) -> Result:
    """Standard rate in basis points of a country code; NOT_FOUND if unknown."""
    if country not in _STANDARD_RATES:
        return err(ErrorCode.NOT_FOUND)
    return ok(_STANDARD_RATES[country])


def tax_refund(paid: Money, owed: Money) -> Result:
    """What is refunded when paid exceeds owed, else Money(0)."""
    return ok(Money(max(0, paid.cents - owed.cents)))


def effective_rate_bp(tax: Money, net: Money) -> Result:
    """tax as basis points of net, rounded down; ZERO if net is zero."""
    if net.cents == 0:
        return err(ErrorCode.ZERO)
    return ok(tax.cents * 10000 // net.cents)
