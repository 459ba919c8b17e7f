"""Stock levels, reorders and valuation for the SKUs on invoice lines."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok


def restock(stock: dict, sku: str, qty: int) -> Result:
    """A new stock dict with qty added to sku (created at 0); ZERO if qty is 0, NEGATIVE if qty < 0."""
    if qty == 0:
        return err(ErrorCode.ZERO)
    if qty < 0:
        return err(ErrorCode.NEGATIVE)
    return ok({**stock, sku: stock.get(sku, 0) + qty})


def pick_items(stock: dict, sku: str, qty: int) -> Result:
    """A new stock dict with qty taken from sku; NOT_FOUND if sku is unknown, TOO_LARGE if not enough."""
    if sku not in stock:
        return err(ErrorCode.NOT_FOUND)
    if qty > stock[sku]:
        return err(ErrorCode.TOO_LARGE)
    return ok({**stock, sku: stock[sku] - qty})


def needs_reorder(stock: dict, sku: str, minimum: int) -> Result:
    """True when sku's level is below minimum (unknown skus count as 0)."""
    return ok(stock.get(sku, 0) < minimum)


def reorder_quantity(level: int, target: int, pack: int) -> Result:
    """Units to order to reach target, rounded up to whole packs; ZERO if pack is 0, 0 if level >= target."""
    if pack == 0:
        return err(ErrorCode.ZERO)
    missing = max(0, target - level)
    return ok(-(-missing // pack) * pack)


def stock_value(stock: dict, prices: dict) -> Result:
    """Total Money of stock at unit prices (Money per sku); NOT_FOUND if a stocked sku has no price."""
    total = 0
    for sku, qty in stock.items():
        if sku not in prices:
            return err(ErrorCode.NOT_FOUND)
        total += qty * prices[sku].cents
    return ok(Money(total))


def out_of_stock(stock: dict) -> Result:
    """Sorted skus whose level is 0 or less."""
    return ok(sorted(sku for sku, qty in stock.items() if qty <= 0))


def merge_stock(a: dict, b: dict) -> Result:
    """Levels of two warehouses summed per sku, as a new dict."""
    out = dict(a)
    for sku, qty in b.items():
        out[sku] = out.get(sku, 0) + qty
    return ok(out)


def sku_category(sku: str) -> Result:
    """The letters before the first '-' of sku, upper-cased ('ab-100' -> 'AB'); INVALID without '-'."""
    head, sep, _ = sku.partition("-")
    if not sep or not head:
        return err(ErrorCode.INVALID)
    return ok(head.upper())


def days_of_cover(level: int, daily_use: int) -> Result:
    """Whole days the level lasts at daily_use; ZERO if daily_use is 0, NEGATIVE if either is < 0."""
    if daily_use == 0:
        return err(ErrorCode.ZERO)
    if level < 0 or daily_use < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(level // daily_use)


def top_skus(stock: dict, n: int) -> Result:
    """The n skus with the highest levels, highest first, ties by sku; INVALID if n < 1."""
    if n < 1:
        return err(ErrorCode.INVALID)
    return ok([sku for sku, _ in sorted(stock.items(), key=lambda kv: (-kv[1], kv[0]))[:n]])
