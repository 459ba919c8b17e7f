"""Tests for acme_ledger.accounts (ledger accounts): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import Account, ErrorCode, Money, Result
from acme_ledger.accounts import open_account
from acme_ledger.accounts import deposit
from acme_ledger.accounts import withdraw
from acme_ledger.accounts import close_account
from acme_ledger.accounts import account_balance
from acme_ledger.accounts import is_overdrawn
from acme_ledger.accounts import rename_owner
from acme_ledger.accounts import total_balance
from acme_ledger.accounts import find_account
from acme_ledger.accounts import open_accounts
from acme_ledger.accounts import richest_account


def test_open_account_new():
    r = open_account('ACC-000001', 'Ada')
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('ACC-000001', 'Ada', Money(0))


def test_open_account_is_open():
    r = open_account('ACC-000002', 'Bo')
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('ACC-000002', 'Bo', Money(0), False)


def test_open_account_blank_owner():
    r = open_account('ACC-000003', '  ')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_deposit_adds():
    r = deposit(Account('A1', 'Ada', Money(100)), Money(50))
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A1', 'Ada', Money(150))


def test_deposit_from_zero():
    r = deposit(Account('A2', 'Bo', Money(0)), Money(999))
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A2', 'Bo', Money(999))


def test_deposit_closed():
    r = deposit(Account('A3', 'Cy', Money(10), True), Money(5))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.CLOSED


def test_withdraw_takes():
    r = withdraw(Account('A1', 'Ada', Money(500)), Money(200))
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A1', 'Ada', Money(300))


def test_withdraw_everything():
    r = withdraw(Account('A2', 'Bo', Money(80)), Money(80))
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A2', 'Bo', Money(0))


def test_withdraw_too_much():
    r = withdraw(Account('A3', 'Cy', Money(80)), Money(81))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.TOO_LARGE


def test_close_account_closes():
    r = close_account(Account('A1', 'Ada', Money(5)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A1', 'Ada', Money(5), True)


def test_close_account_keeps_balance():
    r = close_account(Account('A2', 'Bo', Money(-40)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A2', 'Bo', Money(-40), True)


def test_close_account_already_closed():
    r = close_account(Account('A3', 'Cy', Money(0), True))
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.CLOSED


def test_account_balance_positive():
    r = account_balance(Account('A1', 'Ada', Money(1234)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(1234)


def test_account_balance_zero():
    r = account_balance(Account('A2', 'Bo', Money(0)))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(0)


def test_account_balance_closed_too():
    r = account_balance(Account('A3', 'Cy', Money(-7), True))
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(-7)


def test_is_overdrawn_negative():
    r = is_overdrawn(Account('A1', 'Ada', Money(-1)))
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_overdrawn_zero():
    r = is_overdrawn(Account('A2', 'Bo', Money(0)))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_overdrawn_positive():
    r = is_overdrawn(Account('A3', 'Cy', Money(50)))
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_rename_owner_renames():
    r = rename_owner(Account('A1', 'Ada', Money(5)), 'Grace')
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A1', 'Grace', Money(5))


def test_rename_owner_keeps_closed():
    r = rename_owner(Account('A2', 'Bo', Money(0), True), 'Bea')
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A2', 'Bea', Money(0), True)


def test_rename_owner_blank():
    r = rename_owner(Account('A3', 'Cy', Money(5)), '')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_total_balance_two():
    r = total_balance([Account('A1', 'Ada', Money(100)), Account('A2', 'Bo', Money(250))])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(350)


def test_total_balance_with_negative():
    r = total_balance([Account('A1', 'Ada', Money(100)), Account('A2', 'Bo', Money(-300))])
    assert isinstance(r, Result) and r.ok
    assert r.value == Money(-200)


def test_total_balance_none():
    r = total_balance([])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_find_account_found():
    r = find_account([Account('A1', 'Ada', Money(1)), Account('A2', 'Bo', Money(2))], 'A2')
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A2', 'Bo', Money(2))


def test_find_account_first_match():
    r = find_account([Account('A1', 'Ada', Money(1)), Account('A1', 'Bo', Money(2))], 'A1')
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A1', 'Ada', Money(1))


def test_find_account_missing():
    r = find_account([Account('A1', 'Ada', Money(1))], 'A9')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NOT_FOUND


def test_open_accounts_filters():
    r = open_accounts([Account('A1', 'Ada', Money(1)), Account('A2', 'Bo', Money(2), True)])
    assert isinstance(r, Result) and r.ok
    assert r.value == [Account('A1', 'Ada', Money(1))]


def test_open_accounts_all_closed():
    r = open_accounts([Account('A2', 'Bo', Money(2), True)])
    assert isinstance(r, Result) and r.ok
    assert r.value == []


def test_open_accounts_keeps_order():
    r = open_accounts([Account('B', 'Bo', Money(2)), Account('A', 'Ada', Money(1))])
    assert isinstance(r, Result) and r.ok
    assert r.value == [Account('B', 'Bo', Money(2)), Account('A', 'Ada', Money(1))]


def test_richest_account_highest():
    r = richest_account([Account('A1', 'Ada', Money(10)), Account('A2', 'Bo', Money(90))])
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A2', 'Bo', Money(90))


def test_richest_account_single():
    r = richest_account([Account('A1', 'Ada', Money(-5))])
    assert isinstance(r, Result) and r.ok
    assert r.value == Account('A1', 'Ada', Money(-5))


def test_richest_account_none():
    r = richest_account([])
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY
