"""Calendar helpers for billing: parsing, due dates, fiscal periods."""

from datetime import date, timedelta

from acme_ledger.core import ErrorCode, Result, err, ok


def parse_iso_date(text: str) -> Result:
    """Parse 'YYYY-MM-DD' into a date; INVALID if it is not one."""
    try:
        return ok(date.fromisoformat(text))
    except ValueError:
        return err(ErrorCode.INVALID)


def days_between(start: date, end: date) -> Result:
    """Days from start to end; NEGATIVE if end is before start."""
    if end < start:
        return err(ErrorCode.NEGATIVE)
    return ok((end - start).days)


def add_days(d: date, n: int) -> Result:
    """The date n days after d; NEGATIVE if n < 0."""
    if n < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(d + timedelta(days=n))


def is_weekend(d: date) -> Result:
    """True if d is a Saturday or a Sunday."""
    return ok(d.weekday() >= 5)


def month_start(d: date) -> Result:
    """First day of d's month."""
    return ok(d.replace(day=1))


def quarter_of(d: date) -> Result:
    """Calendar quarter of d, 1 to 4."""
    return ok((d.month - 1) // 3 + 1)


def format_date_us(d: date) -> Result:
    """d formatted as 'MM/DD/YYYY'."""
    return ok(d.strftime("%m/%d/%Y"))


def due_date(issued: date, terms_days: int) -> Result:
    """issued plus terms_days; INVALID unless terms_days is 15, 30 or 60."""
    if terms_days not in (15, 30, 60):
        return err(ErrorCode.INVALID)
    return ok(issued + timedelta(days=terms_days))


def is_overdue(due: date, today: date) -> Result:
    """True if today is after the due date."""
    return ok(today > due)


def fiscal_year(d: date) -> Result:
    """Fiscal year of d; a fiscal year starts on April 1st."""
    return ok(d.year if d.month >= 4 else d.year - 1)


def year_end(d: date) -> Result:
    """December 31st of d's year."""
    return ok(date(d.year, 12, 31))
