"""Ledger accounts: opening, deposits, withdrawals, lookups."""

from dataclasses import replace

from acme_ledger.core import Account, ErrorCode, Money, Result, err, ok


def open_account(account_id: str, owner: str) -> Result:
    """A new open account with a zero balance; EMPTY if owner is blank."""
    if not owner.strip():
        return err(ErrorCode.EMPTY)
    return ok(Account(account_id, owner, Money(0)))


def deposit(acct: Account, amount: Money) -> Result:
    """acct with amount added to its balance; CLOSED if acct is closed."""
    if acct.closed:
        return err(ErrorCode.CLOSED)
    return ok(replace(acct, balance=Money(acct.balance.cents + amount.cents)))


def withdraw(acct: Account, amount: Money) -> Result:
    """acct with amount taken out; TOO_LARGE if amount exceeds the balance."""
    if amount.cents > acct.balance.cents:
        return err(ErrorCode.TOO_LARGE)
    return ok(replace(acct, balance=Money(acct.balance.cents - amount.cents)))


def close_account(acct: Account) -> Result:
    """acct marked closed; CLOSED if it is already closed."""
    if acct.closed:
        return err(ErrorCode.CLOSED)
    return ok(replace(acct, closed=True))


def account_balance(acct: Account) -> Result:
    """The balance of acct."""
    return ok(acct.balance)


def is_overdrawn(acct: Account) -> Result:
    """True if the balance of acct is below zero."""
    return ok(acct.balance.cents < 0)


def rename_owner(acct: Account, owner: str) -> Result:
    """acct with a new owner; EMPTY if owner is blank."""
    if not owner.strip():
        return err(ErrorCode.EMPTY)
    return ok(replace(acct, owner=owner))


def total_balance(accts: list[Account]) -> Result:
    """Sum of all balances; EMPTY if there are no accounts."""
    if not accts:
        return err(ErrorCode.EMPTY)
    return ok(Money(sum(a.balance.cents for a in accts)))


def find_account(accts: list[Account], account_id: str) -> Result:
    """The account with that id; NOT_FOUND if there is none."""
    for a in accts:
        if a.id == account_id:
            return ok(a)
    return err(ErrorCode.NOT_FOUND)


def open_accounts(accts: list[Account]) -> Result:
    """Only the accounts that are not closed, in order."""
    return ok([a for a in accts if not a.closed])


def richest_account(accts: list[Account]) -> Result:
    """The account with the highest balance; EMPTY if there are none."""
    if not accts:
        return err(ErrorCode.EMPTY)
    return ok(max(accts, key=lambda a: a.balance.cents))
