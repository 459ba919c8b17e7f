"""Tests for acme_ledger.audit (journal checks): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Money, Result
from acme_ledger.audit import is_balanced
from acme_ledger.audit import imbalance
from acme_ledger.audit import debit_total
from acme_ledger.audit import large_entries
from acme_ledger.audit import duplicate_entries
from acme_ledger.audit import net_by_account
from acme_ledger.audit import round_amount_share
from acme_ledger.audit import sample_every
from acme_ledger.audit import first_digit_counts
from acme_ledger.audit import reversal_of


def test_is_balanced_balanced():
    r = is_balanced([('A', Money(500)), ('B', Money(-500))])
    assert isinstance(r, Result) and r.ok
    assert r.value == True


def test_is_balanced_unbalanced():
    r = is_balanced([('A', Money(500)), ('B', Money(-400))])
    assert isinstance(r, Result) and r.ok
    assert r.value == False


def test_is_balanced_empty():
    r = is_balanced([])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_imbalance_debit_side():
    r = imbalance([('A', Money(500)), ('B', Money(-400))])
    assert isinstance(r, Result) and r.ok
    assert r.value == ('debit', Money(100))


def test_imbalance_credit_side():
    r = imbalance([('A', Money(5)), ('B', Money(-25))])
    assert isinstance(r, Result) and r.ok
    assert r.value == ('credit', Money(20))


def test_imbalance_balanced():
    r = imbalance([])
    assert isinstance(r, Result) and r.ok
    assert r.value == ('balanced', Money(0))


def test_debit_total_positives():
    r = debit_total([('A', Money(500)), ('B', Money(-400)), ('C', Money(20))])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(520)


def test_debit_total_credits_only():
    r = debit_total([('B', Money(-400))])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_debit_total_empty():
    r = debit_total([])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_large_entries_absolute():
    r = large_entries([('A', Money(500)), ('B', Money(-900)), ('C', Money(20))], Money(500))
    assert isinstance(r, Result) and r.ok
    assert r.value == ['A', 'B']


def test_large_entries_none():
    r = large_entries([('C', Money(20))], Money(500))
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_large_entries_negative_threshold():
    r = large_entries([], Money(-1))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_duplicate_entries_repeat():
    r = duplicate_entries([('A', Money(5)), ('B', Money(5)), ('A', Money(5)), ('A', Money(5))])
    assert isinstance(r, Result) and r.ok
    assert r.value == [('A', Money(5))]


def test_duplicate_entries_none():
    r = duplicate_entries([('A', Money(5)), ('A', Money(6))])
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_duplicate_entries_two():
    r = duplicate_entries([('B', Money(1)), ('A', Money(2)), ('A', Money(2)), ('B', Money(1))])
    assert isinstance(r, Result) and r.ok
    assert r.value == [('A', Money(2)), ('B', Money(1))]


def test_net_by_account_sums():
    r = net_by_account([('A', Money(5)), ('B', Money(-3)), ('A', Money(-2))])
    assert isinstance(r, Result) and r.ok
    assert r.value == {'A': Money(3), 'B': Money(-3)}


def test_net_by_account_single():
    r = net_by_account([('C', Money(7))])
    assert isinstance(r, Result) and r.ok
    assert r.value == {'C': Money(7)}


def test_net_by_account_empty():
    r = net_by_account([])
    assert isinstance(r, Result) and r.ok
    assert r.value == {}


def test_round_amount_share_half():
    r = round_amount_share([('A', Money(10000)), ('B', Money(1234))])
    assert isinstance(r, Result) and r.ok
    assert r.value == 50


def test_round_amount_share_rounds_down():
    r = round_amount_share([('A', Money(20000)), ('B', Money(1)), ('C', Money(2))])
    assert isinstance(r, Result) and r.ok
    assert r.value == 33


def test_round_amount_share_empty():
    r = round_amount_share([])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_sample_every_every_second():
    r = sample_every([('A', Money(1)), ('B', Money(2)), ('C', Money(3))], 2)
    assert isinstance(r, Result) and r.ok
    assert r.value == [('A', Money(1)), ('C', Money(3))]


def test_sample_every_every_one():
    r = sample_every([('A', Money(1))], 1)
    assert isinstance(r, Result) and r.ok
    assert r.value == [('A', Money(1))]


def test_sample_every_bad_k():
    r = sample_every([('A', Money(1))], 0)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_first_digit_counts_counts():
    r = first_digit_counts([('A', Money(123)), ('B', Money(-150)), ('C', Money(9))])
    assert isinstance(r, Result) and r.ok
    assert r.value == {1: 2, 9: 1}


def test_first_digit_counts_skips_zero():
    r = first_digit_counts([('A', Money(0)), ('B', Money(42))])
    assert isinstance(r, Result) and r.ok
    assert r.value == {4: 1}


def test_first_digit_counts_empty():
    r = first_digit_counts([])
    assert isinstance(r, Result) and r.ok
    assert r.value == {}


def test_reversal_of_negates():
    r = reversal_of([('A', Money(5)), ('B', Money(-3))])
    assert isinstance(r, Result) and r.ok
    assert r.value == [('A', Money(-5)), ('B', Money(3))]


def test_reversal_of_zero():
    r = reversal_of([('A', Money(0))])
    assert isinstance(r, Result) and r.ok
    assert r.value == [('A', Money(0))]


def test_reversal_of_empty():
    r = reversal_of([])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY
