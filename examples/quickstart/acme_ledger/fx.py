"""Foreign exchange. Rates are integer basis points of the quote currency: 10850 is 1.085."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok


def convert(m: Money, rate_bp: int) -> Result:
    """m converted at rate_bp, rounded down; INVALID if rate_bp <= 0."""
    if rate_bp <= 0:
        return err(ErrorCode.INVALID)
    return ok(Money(m.cents * rate_bp // 10000))


def invert_rate(rate_bp: int) -> Result:
    """The inverse rate in basis points, rounded down; ZERO if rate_bp is 0."""
    if rate_bp == 0:
        return err(ErrorCode.ZERO)
    return ok(100_000_000 // rate_bp)


def is_currency_code(text: str) -> Result:
    """True if text is three upper-case letters, like 'EUR'."""
    return ok(len(text) == 3 and text.isalpha() and text.isupper())


def pair_code(base: str, quote: str) -> Result:
    """'BASE/QUOTE'; INVALID unless both codes have 3 letters."""
    if len(base) != 3 or len(quote) != 3:
        return err(ErrorCode.INVALID)
    return ok(f"{base}/{quote}")


def parse_pair(text: str) -> Result:
    """('EUR', 'USD') from 'EUR/USD'; INVALID if text has no single '/'."""
    parts = text.split("/")
    if len(parts) != 2:
        return err(ErrorCode.INVALID)
    return ok((parts[0], parts[1]))


def spread_bp(bid: int, ask: int) -> Result:
    """ask minus bid; NEGATIVE if ask is below bid."""
    if ask < bid:
        return err(ErrorCode.NEGATIVE)
    return ok(ask - bid)


def mid_rate(bid: int, ask: int) -> Result:
    """Average of bid and ask, rounded down."""
    return ok((bid + ask) // 2)


def best_rate(rates: dict[str, int]) -> Result:
    """The currency with the highest rate; EMPTY if rates is empty."""
    if not rates:
        return err(ErrorCode.EMPTY)
    return ok(max(rates, key=rates.get))


def fx_fee(m: Money) -> Result:
    """Fee of 1% of m rounded down, but at least 100 cents."""
    return ok(Money(max(100, m.cents // 100)))


def rate_change_pct(old_bp: int, new_bp: int) -> Result:
    """Change from old to new in whole percent, rounded down; ZERO if old_bp is 0."""
    if old_bp == 0:
        return err(ErrorCode.ZERO)
    return ok((new_bp - old_bp) * 100 // old_bp)


def within_band(rate_bp: int, low: int, high: int) -> Result:
    """True if low <= rate_bp <= high; INVALID if low > high."""
    if low > high:
        return err(ErrorCode.INVALID)
    return ok(low <= rate_bp <= high)
