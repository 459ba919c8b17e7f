"""Identifiers: account ids, invoice numbers, SKUs and references."""

from acme_ledger.core import ErrorCode, Result, err, ok


def make_account_id(n: int) -> Result:
    """'ACC-' plus n as 6 digits ('ACC-000042'); NEGATIVE if n < 0."""
    if n < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(f"ACC-{n:06d}")


def make_invoice_number(year: int, seq: int) -> Result:
    """'INV-2024-0007' for (2024, 7); TOO_LARGE if seq > 9999."""
    if seq > 9999:
        return err(ErrorCode.TOO_LARGE)
    return ok(f"INV-{year}-{seq:04d}")


def parse_account_id(text: str) -> Result:
    """The number in 'ACC-000042' (42); INVALID if text is not such an id."""
    if not text.startswith("ACC-") or not text[4:].isdigit():
        return err(ErrorCode.INVALID)
    return ok(int(text[4:]))


def is_valid_sku(text: str) -> Result:
    """True if text is 'SKU-' followed by exactly 4 digits."""
    return ok(len(text) == 8 and text.startswith("SKU-") and text[4:].isdigit())


def id_prefix(ident: str) -> Result:
    """The part of ident before the first '-'; INVALID if it has no '-'."""
    if "-" not in ident:
        return err(ErrorCode.INVALID)
    return ok(ident.split("-", 1)[0])


def checksum_digit(digits: str) -> Result:
    """Sum of the digits modulo 10; INVALID unless digits is all digits."""
    if not digits.isdigit():
        return err(ErrorCode.INVALID)
    return ok(sum(int(c) for c in digits) % 10)


def short_ref(ident: str) -> Result:
    """The last 4 characters of ident, upper-cased; INVALID if it is shorter."""
    if len(ident) < 4:
        return err(ErrorCode.INVALID)
    return ok(ident[-4:].upper())


def join_ref(prefix: str, n: int) -> Result:
    """prefix and n joined by '/' ('PO/17'); EMPTY if prefix is blank."""
    if not prefix.strip():
        return err(ErrorCode.EMPTY)
    return ok(f"{prefix}/{n}")


def customer_code(name: str) -> Result:
    """First 3 letters of name, upper-cased; INVALID if it has fewer than 3."""
    if len(name) < 3:
        return err(ErrorCode.INVALID)
    return ok(name[:3].upper())


def is_test_id(ident: str) -> Result:
    """True if ident starts with 'TEST-'."""
    return ok(ident.startswith("TEST-"))


def batch_id(day: str, n: int) -> Result:
    """'B' + day with its '-' removed + '-' + n ('B20240501-3'); NEGATIVE if n < 0."""
    if n < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(f"B{day.replace('-', '')}-{n}")
