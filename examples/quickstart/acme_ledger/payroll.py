"""Payroll: gross pay, overtime, deductions and pay-slip figures (Money in integer cents)."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok


def hourly_pay(rate: Money, hours: int, minutes: int = 0) -> Result:
    """rate (per hour) for hours and minutes worked, rounded down to the cent; NEGATIVE if hours < 0,
    INVALID unless 0 <= minutes <= 59."""
    if hours < 0:
        return err(ErrorCode.NEGATIVE)
    if not 0 <= minutes <= 59:
        return err(ErrorCode.INVALID)
    return ok(Money(rate.cents * (hours * 60 + minutes) // 60))


def overtime_pay(rate: Money, hours: int, threshold: int = 40) -> Result:
    """Hours above threshold paid at 1.5x rate, rounded down to the cent; NEGATIVE if hours < 0."""
    if hours < 0:
        return err(ErrorCode.NEGATIVE)
    extra = max(0, hours - threshold)
    return ok(Money(rate.cents * extra * 3 // 2))


def gross_weekly(rate: Money, hours: int) -> Result:
    """Regular pay for up to 40 hours plus 1.5x overtime above 40; NEGATIVE if hours < 0."""
    if hours < 0:
        return err(ErrorCode.NEGATIVE)
    regular = min(hours, 40)
    return ok(Money(rate.cents * regular + rate.cents * max(0, hours - 40) * 3 // 2))


def annual_to_monthly(salary: Money) -> Result:
    """A yearly salary as twelve monthly payments, rounded down; NEGATIVE if salary < 0."""
    if salary.cents < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(salary.cents // 12))


def pension_contribution(gross: Money, rate_bp: int) -> Result:
    """gross times rate in basis points, rounded down; INVALID unless 0 <= rate_bp <= 2000."""
    if not 0 <= rate_bp <= 2000:
        return err(ErrorCode.INVALID)
    return ok(Money(gross.cents * rate_bp // 10_000))


def net_pay(gross: Money, deductions: list) -> Result:
    """gross minus the sum of deductions (Money); NEGATIVE if the deductions exceed gross."""
    total = sum(d.cents for d in deductions)
    if total > gross.cents:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(gross.cents - total))


def bonus_share(pool: Money, scores: dict, employee: str) -> Result:
    """employee's share of pool in proportion to scores, rounded down; NOT_FOUND if absent, ZERO if
    the scores sum to 0."""
    if employee not in scores:
        return err(ErrorCode.NOT_FOUND)
    total = sum(scores.values())
    if total == 0:
        return err(ErrorCode.ZERO)
    return ok(Money(pool.cents * scores[employee] // total))


def prorate_salary(monthly: Money, days_worked: int, days_in_month: int) -> Result:
    """monthly times days_worked / days_in_month, rounded down; ZERO if days_in_month is 0,
    INVALID if days_worked is outside 0..days_in_month."""
    if days_in_month == 0:
        return err(ErrorCode.ZERO)
    if not 0 <= days_worked <= days_in_month:
        return err(ErrorCode.INVALID)
    return ok(Money(monthly.cents * days_worked // days_in_month))


def payslip_line(label: str, amount: Money) -> Result:
    """'Label: 1234.50' with the label stripped; EMPTY if the label is blank, NEGATIVE if amount < 0."""
    if not label.strip():
        return err(ErrorCode.EMPTY)
    if amount.cents < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(f"{label.strip()}: {amount.cents // 100}.{amount.cents % 100:02d}")


def vacation_days(months_employed: int) -> Result:
    """Two vacation days per full month employed, capped at 25; NEGATIVE if months < 0."""
    if months_employed < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(min(25, 2 * months_employed))
