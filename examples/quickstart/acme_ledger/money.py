"""Arithmetic and formatting of Money amounts (integer cents)."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok


def add_cents(a: Money, b: Money) -> Result:
    """Sum of two amounts."""
    return ok(Money(a.cents + b.cents))


def subtract_cents(a: Money, b: Money) -> Result:
    """a minus b; NEGATIVE if b is larger than a."""
    if b.cents > a.cents:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(a.cents - b.cents))


def scale_money(m: Money, factor: int) -> Result:
    """m times an integer factor; NEGATIVE if factor < 0."""
    if factor < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(m.cents * factor))


def halve_money(m: Money) -> Result:
    """Half of m, rounded down to the cent."""
    return ok(Money(m.cents // 2))


def money_from_units(units: int, cents: int) -> Result:
    """Money from whole units and cents; INVALID unless 0 <= cents <= 99."""
    if not 0 <= cents <= 99:
        return err(ErrorCode.INVALID)
    return ok(Money(units * 100 + cents))


def money_to_text(m: Money) -> Result:
    """m as text like '12.05'; NEGATIVE if m < 0."""
    if m.cents < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(f"{m.cents // 100}.{m.cents % 100:02d}")


def is_zero_money(m: Money) -> Result:
    """True if m is exactly zero."""
    return ok(m.cents == 0)


def max_money(a: Money, b: Money) -> Result:
    """The larger of two amounts."""
    return ok(a if a.cents >= b.cents else b)


def sum_money(items: list[Money]) -> Result:
    """Total of a list of amounts; EMPTY if the list is empty."""
    if not items:
        return err(ErrorCode.EMPTY)
    return ok(Money(sum(m.cents for m in items)))


def percent_of(m: Money, pct: int) -> Result:
    """pct percent of m, rounded down; INVALID unless 0 <= pct <= 100."""
    if not 0 <= pct <= 100:
        return err(ErrorCode.INVALID)
    return ok(Money(m.cents * pct // 100))


def round_to_unit(m: Money) -> Result:
    """m rounded to whole units, halves up (1250 -> 1300)."""
    return ok(Money((m.cents + 50) // 100 * 100))


def split_evenly(m: Money, parts: int) -> Result:
    """Share of m per part, rounded down; ZERO if parts is 0."""
    if parts == 0:
        return err(ErrorCode.ZERO)
    return ok(Money(m.cents // parts))
