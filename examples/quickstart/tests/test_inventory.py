"""Tests for acme_ledger.inventory (stock levels): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.inventory import restock
from acme_ledger.inventory import pick_items
from acme_ledger.inventory import needs_reorder
from acme_ledger.inventory import reorder_quantity
from acme_ledger.inventory import stock_value
from acme_ledger.inventory import out_of_stock
from acme_ledger.inventory import merge_stock
from acme_ledger.inventory import sku_category
from acme_ledger.inventory import days_of_cover
from acme_ledger.inventory import top_skus


def test_restock_existing():
    r = restock({'A-1': 2}, 'A-1', 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == {'A-1': 5}


def test_restock_new_sku():
    r = restock({'A-1': 2}, 'B-9', 4)
    assert isinstance(r, Result) and r.ok
    assert r.value == {'A-1': 2, 'B-9': 4}


def test_restock_zero():
    r = restock({}, 'A-1', 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_pick_items_takes():
    r = pick_items({'A-1': 5}, 'A-1', 2)
    assert isinstance(r, Result) and r.ok
    assert r.value == {'A-1': 3}


def test_pick_items_unknown():
    r = pick_items({'A-1': 5}, 'Z-0', 1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_pick_items_not_enough():
    r = pick_items({'A-1': 5}, 'A-1', 6)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.TOO_LARGE


def test_needs_reorder_low():
    r = needs_reorder({'A-1': 2}, 'A-1', 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == True


def test_needs_reorder_enough():
    r = needs_reorder({'A-1': 5}, 'A-1', 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == False


def test_needs_reorder_unknown_sku():
    r = needs_reorder({}, 'A-1', 1)
    assert isinstance(r, Result) and r.ok
    assert r.value == True


def test_reorder_quantity_whole_packs():
    r = reorder_quantity(3, 20, 6)
    assert isinstance(r, Result) and r.ok
    assert r.value == 18


def test_reorder_quantity_already_full():
    r = reorder_quantity(25, 20, 6)
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_reorder_quantity_zero_pack():
    r = reorder_quantity(3, 20, 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_stock_value_sums():
    r = stock_value({'A-1': 2, 'B-2': 3}, {'A-1': Money(150), 'B-2': Money(1000)})
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(3300)


def test_stock_value_empty():
    r = stock_value({}, {})
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_stock_value_missing_price():
    r = stock_value({'A-1': 2}, {})
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_out_of_stock_sorted():
    r = out_of_stock({'B-2': 0, 'A-1': -1, 'C-3': 4})
    assert isinstance(r, Result) and r.ok
    assert r.value == ['A-1', 'B-2']


def test_out_of_stock_none():
    r = out_of_stock({'C-3': 4})
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_out_of_stock_empty():
    r = out_of_stock({})
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_merge_stock_overlap():
    r = merge_stock({'A-1': 2}, {'A-1': 3, 'B-2': 1})
    assert isinstance(r, Result) and r.ok
    assert r.value == {'A-1': 5, 'B-2': 1}


def test_merge_stock_disjoint():
    r = merge_stock({'A-1': 2}, {'C-3': 7})
    assert isinstance(r, Result) and r.ok
    assert r.value == {'A-1': 2, 'C-3': 7}


def test_merge_stock_empty():
    r = merge_stock({}, {})
    assert isinstance(r, Result) and r.ok
    assert r.value == {}


def test_sku_category_upper():
    r = sku_category('ab-100')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'AB'


def test_sku_category_first_dash():
    r = sku_category('KIT-2-XL')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'KIT'


def test_sku_category_no_dash():
    r = sku_category('AB100')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_days_of_cover_whole_days():
    r = days_of_cover(100, 30)
    assert isinstance(r, Result) and r.ok
    assert r.value == 3


def test_days_of_cover_zero_use():
    r = days_of_cover(100, 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.ZERO


def test_days_of_cover_negative():
    r = days_of_cover(-5, 2)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_top_skus_highest_first():
    r = top_skus({'A-1': 5, 'B-2': 9, 'C-3': 1}, 2)
    assert isinstance(r, Result) and r.ok
    assert r.value == ['B-2', 'A-1']


def test_top_skus_ties_by_sku():
    r = top_skus({'B-2': 4, 'A-1': 4}, 2)
    assert isinstance(r, Result) and r.ok
    assert r.value == ['A-1', 'B-2']


def test_top_skus_bad_n():
    r = top_skus({'A-1': 5}, 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID
