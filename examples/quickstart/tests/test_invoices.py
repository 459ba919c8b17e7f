"""Tests for acme_ledger.invoices (invoices and lines): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Invoice, Line, Money, Result
from acme_ledger.invoices import line_total
from acme_ledger.invoices import invoice_total
from acme_ledger.invoices import make_line
from acme_ledger.invoices import add_line
from acme_ledger.invoices import mark_paid
from acme_ledger.invoices import line_count
from acme_ledger.invoices import find_line
from acme_ledger.invoices import remove_sku
from acme_ledger.invoices import total_quantity
from acme_ledger.invoices import is_empty_invoice
from acme_ledger.invoices import largest_line
from acme_ledger.invoices import paid_numbers


def test_line_total_two_units():
    r = line_total(Line('SKU-0001', 2, Money(150)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(300)


def test_line_total_one_unit():
    r = line_total(Line('SKU-0002', 1, Money(999)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(999)


def test_line_total_free_item():
    r = line_total(Line('SKU-0003', 5, Money(0)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_invoice_total_two_lines():
    r = invoice_total(Invoice('INV-1', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999)))))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1299)


def test_invoice_total_one_line():
    r = invoice_total(Invoice('INV-2', (Line('SKU-0001', 2, Money(150)),)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(300)


def test_invoice_total_no_lines():
    r = invoice_total(Invoice('INV-3'))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_make_line_valid():
    r = make_line('SKU-0001', 2, Money(150))
    assert isinstance(r, Result) and r.ok
    assert r.value == Line('SKU-0001', 2, Money(150))


def test_make_line_single():
    r = make_line('SKU-0009', 1, Money(5))
    assert isinstance(r, Result) and r.ok
    assert r.value == Line('SKU-0009', 1, Money(5))


def test_make_line_zero_qty():
    r = make_line('SKU-0001', 0, Money(150))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_add_line_to_empty():
    r = add_line(Invoice('INV-1'), Line('SKU-0001', 2, Money(150)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Invoice('INV-1', (Line('SKU-0001', 2, Money(150)),))


def test_add_line_appends():
    r = add_line(Invoice('INV-2', (Line('SKU-0001', 2, Money(150)),)), Line('SKU-0002', 1, Money(999)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Invoice('INV-2', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999))))


def test_add_line_paid():
    r = add_line(Invoice('INV-3', (), True), Line('SKU-0001', 2, Money(150)))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.CLOSED


def test_mark_paid_keeps_lines():
    r = mark_paid(Invoice('INV-1', (Line('SKU-0001', 2, Money(150)),)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Invoice('INV-1', (Line('SKU-0001', 2, Money(150)),), True)


def test_mark_paid_already_paid():
    r = mark_paid(Invoice('INV-2', (Line('SKU-0002', 1, Money(999)),), True))
    assert isinstance(r, Result) and r.ok
    assert r.value == Invoice('INV-2', (Line('SKU-0002', 1, Money(999)),), True)


def test_mark_paid_no_lines():
    r = mark_paid(Invoice('INV-3'))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_line_count_none():
    r = line_count(Invoice('INV-1'))
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_line_count_two():
    r = line_count(Invoice('INV-2', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999)))))
    assert isinstance(r, Result) and r.ok
    assert r.value == 2


def test_line_count_paid_counts():
    r = line_count(Invoice('INV-3', (Line('SKU-0001', 2, Money(150)),), True))
    assert isinstance(r, Result) and r.ok
    assert r.value == 1


def test_find_line_found():
    r = find_line(Invoice('INV-1', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999)))), 'SKU-0002')
    assert isinstance(r, Result) and r.ok
    assert r.value == Line('SKU-0002', 1, Money(999))


def test_find_line_first_of_two():
    r = find_line(Invoice('INV-2', (Line('SKU-0001', 2, Money(150)), Line('SKU-0001', 9, Money(1)))), 'SKU-0001')
    assert isinstance(r, Result) and r.ok
    assert r.value == Line('SKU-0001', 2, Money(150))


def test_find_line_missing():
    r = find_line(Invoice('INV-3', (Line('SKU-0001', 2, Money(150)),)), 'SKU-0404')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_remove_sku_removes():
    r = remove_sku(Invoice('INV-1', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999)))), 'SKU-0001')
    assert isinstance(r, Result) and r.ok
    assert r.value == Invoice('INV-1', (Line('SKU-0002', 1, Money(999)),))


def test_remove_sku_removes_all_copies():
    r = remove_sku(Invoice('INV-2', (Line('SKU-0001', 2, Money(150)), Line('SKU-0001', 2, Money(150)))), 'SKU-0001')
    assert isinstance(r, Result) and r.ok
    assert r.value == Invoice('INV-2', ())


def test_remove_sku_missing():
    r = remove_sku(Invoice('INV-3', (Line('SKU-0001', 2, Money(150)),)), 'SKU-0404')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_total_quantity_two_lines():
    r = total_quantity(Invoice('INV-1', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999)))))
    assert isinstance(r, Result) and r.ok
    assert r.value == 3


def test_total_quantity_none():
    r = total_quantity(Invoice('INV-2'))
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_total_quantity_one_line():
    r = total_quantity(Invoice('INV-3', (Line('SKU-0005', 12, Money(1)),)))
    assert isinstance(r, Result) and r.ok
    assert r.value == 12


def test_is_empty_invoice_empty():
    r = is_empty_invoice(Invoice('INV-1'))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_empty_invoice_one_line():
    r = is_empty_invoice(Invoice('INV-2', (Line('SKU-0001', 2, Money(150)),)))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_empty_invoice_paid_empty():
    r = is_empty_invoice(Invoice('INV-3', (), True))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_largest_line_by_total():
    r = largest_line(Invoice('INV-1', (Line('SKU-0001', 2, Money(150)), Line('SKU-0002', 1, Money(999)))))
    assert isinstance(r, Result) and r.ok
    assert r.value == Line('SKU-0002', 1, Money(999))


def test_largest_line_qty_matters():
    r = largest_line(Invoice('INV-2', (Line('A', 10, Money(50)), Line('B', 1, Money(400)))))
    assert isinstance(r, Result) and r.ok
    assert r.value == Line('A', 10, Money(50))


def test_largest_line_empty():
    r = largest_line(Invoice('INV-3'))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_paid_numbers_filters():
    r = paid_numbers([Invoice('INV-1'), Invoice('INV-2', (), True)])
    assert isinstance(r, Result) and r.ok
    assert r.value == ['INV-2']


def test_paid_numbers_none_paid():
    r = paid_numbers([Invoice('INV-1')])
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_paid_numbers_keeps_order():
    r = paid_numbers([Invoice('INV-9', (), True), Invoice('INV-4', (), True)])
    assert isinstance(r, Result) and r.ok
    assert r.value == ['INV-9', 'INV-4']
