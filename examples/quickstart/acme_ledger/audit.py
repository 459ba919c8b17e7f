"""Audit checks over journal entries: each entry is a (account_id, Money) pair, debits positive."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok


def is_balanced(entries: list) -> Result:
    """True when the amounts of entries sum to zero; EMPTY if there are none."""
    if not entries:
        return err(ErrorCode.EMPTY)
    return ok(sum(m.cents for _, m in entries) == 0)


def imbalance(entries: list) -> Result:
    """('debit', Money) when debits exceed credits, ('credit', Money) when credits do, the Money being
    the absolute difference; ('balanced', Money(0)) otherwise."""
    total = sum(m.cents for _, m in entries)
    side = "debit" if total > 0 else "credit" if total < 0 else "balanced"
    return ok((side, Money(abs(total))))


def debit_total(entries: list) -> Result:
    """Sum of the positive amounts as Money."""
    return ok(Money(sum(m.cents for _, m in entries if m.cents > 0)))


def large_entries(entries: list, threshold: Money) -> Result:
    """Account ids of entries whose absolute amount is at least threshold, in entry order;
    NEGATIVE if threshold < 0."""
    if threshold.cents < 0:
        return err(ErrorCode.NEGATIVE)
    return ok([acc for acc, m in entries if abs(m.cents) >= threshold.cents])


def duplicate_entries(entries: list) -> Result:
    """Entries that appear more than once, each listed once, in order of first repeat."""
    seen, dups = set(), []
    for e in entries:
        key = (e[0], e[1].cents)
        if key in seen and e not in dups:
            dups.append(e)
        seen.add(key)
    return ok(dups)


def net_by_account(entries: list) -> Result:
    """{account_id: Money} with each account's amounts summed."""
    out: dict = {}
    for acc, m in entries:
        out[acc] = out.get(acc, 0) + m.cents
    return ok({acc: Money(c) for acc, c in out.items()})


def round_amount_share(entries: list) -> Result:
    """Whole percentage (rounded down) of entries whose amount is a multiple of 100.00; EMPTY if none."""
    if not entries:
        return err(ErrorCode.EMPTY)
    round_ones = sum(1 for _, m in entries if m.cents % 10_000 == 0)
    return ok(round_ones * 100 // len(entries))


def sample_every(entries: list, k: int) -> Result:
    """Every k-th entry starting with the first; INVALID if k < 1."""
    if k < 1:
        return err(ErrorCode.INVALID)
    return ok(entries[::k])


def first_digit_counts(entries: list) -> Result:
    """{digit: count} of the leading digits 1..9 of the absolute amounts in cents (Benford check),
    zero amounts skipped."""
    counts: dict = {}
    for _, m in entries:
        if m.cents:
            d = int(str(abs(m.cents))[0])
            counts[d] = counts.get(d, 0) + 1
    return ok(counts)


def reversal_of(entries: list) -> Result:
    """The entries with every amount negated, in the same order; EMPTY if there are none."""
    if not entries:
        return err(ErrorCode.EMPTY)
    return ok([(acc, Money(-m.cents)) for acc, m in entries])
