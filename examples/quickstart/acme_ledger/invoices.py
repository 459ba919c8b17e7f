"""Invoices and their lines: totals, edits, payment state."""

from dataclasses import replace

from acme_ledger.core import ErrorCode, Invoice, Line, Money, Result, err, ok


def line_total(line: Line) -> Result:
    """Quantity times unit price of one line."""
    return ok(Money(line.qty * line.price.cents))


def invoice_total(inv: Invoice) -> Result:
    """Sum of qty * price over all lines of inv."""
    return ok(Money(sum(line.qty * line.price.cents for line in inv.lines)))


def make_line(sku: str, qty: int, price: Money) -> Result:
    """A new invoice line; INVALID if qty < 1."""
    if qty < 1:
        return err(ErrorCode.INVALID)
    return ok(Line(sku, qty, price))


def add_line(inv: Invoice, line: Line) -> Result:
    """inv with line appended; CLOSED if inv is already paid."""
    if inv.paid:
        return err(ErrorCode.CLOSED)
    return ok(replace(inv, lines=inv.lines + (line,)))


def mark_paid(inv: Invoice) -> Result:
    """inv marked as paid; EMPTY if it has no lines."""
    if not inv.lines:
        return err(ErrorCode.EMPTY)
    return ok(replace(inv, paid=True))


def line_count(inv: Invoice) -> Result:
    """Number of lines on inv."""
    return ok(len(inv.lines))


def find_line(inv: Invoice, sku: str) -> Result:
    """The first line with that sku; NOT_FOUND if there is none."""
    for line in inv.lines:
        if line.sku == sku:
            return ok(line)
    return err(ErrorCode.NOT_FOUND)


def remove_sku(inv: Invoice, sku: str) -> Result:
    """inv without lines of that sku; NOT_FOUND if none has it."""
    kept = tuple(line for line in inv.lines if line.sku != sku)
    if len(kept) == len(inv.lines):
        return err(ErrorCode.NOT_FOUND)
    return ok(replace(inv, lines=kept))


def total_quantity(inv: Invoice) -> Result:
    """Sum of the quantities of all lines."""
    return ok(sum(line.qty for line in inv.lines))


def is_empty_invoice(inv: Invoice) -> Result:
    """True if inv has no lines."""
    return ok(len(inv.lines) == 0)


def largest_line(inv: Invoice) -> Result:
    """The line with the highest qty * price; EMPTY if inv has no lines."""
    if not inv.lines:
        return err(ErrorCode.EMPTY)
    return ok(max(inv.lines, key=lambda line: line.qty * line.price.cents))


def paid_numbers(invs: list[Invoice]) -> Result:
    """The numbers of the paid invoices, in order."""
    return ok([i.number for i in invs if i.paid])
