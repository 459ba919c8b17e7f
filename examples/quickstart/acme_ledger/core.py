"""House conventions of acme_ledger: support code, not a task target.

Every public function in the library follows three rules that a newcomer (or a base model)
cannot guess, but learns quickly from examples:

1. It never raises for bad input and never returns a bare value: it returns a
   :class:`Result`, built with ``ok(value)`` on success or ``err(ErrorCode.X)`` on failure.
2. Money is integer cents wrapped in :class:`Money` (``Money(1250)`` is 12.50); a float
   amount is a ``TypeError`` at construction.
3. Failures are members of :class:`ErrorCode`, named in the docstring of the function
   (``"NEGATIVE if b > a"``), checked before the success path.

Records (:class:`Account`, :class:`Line`, :class:`Invoice`) are frozen dataclasses; functions
return changed copies made with :func:`dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["Account", "ErrorCode", "Invoice", "Line", "Money", "Result", "err", "ok"]


class ErrorCode(str, Enum):
    """Why an operation failed. The docstring of each function names the codes it returns."""

    NEGATIVE = "negative"
    ZERO = "zero"
    EMPTY = "empty"
    INVALID = "invalid"
    NOT_FOUND = "not_found"
    TOO_LARGE = "too_large"
    CLOSED = "closed"


@dataclass(frozen=True)
class Result:
    """Outcome of every public call: ``ok`` is True with a ``value``, or False with an ``error``."""

    ok: bool
    value: Any = None
    error: ErrorCode | None = None

    @staticmethod
    def success(value: Any = None) -> "Result":
        """A successful Result holding ``value`` (exported as ``ok``)."""
        return Result(True, value, None)

    @staticmethod
    def failure(code: ErrorCode) -> "Result":
        """A failed Result with an :class:`ErrorCode` (exported as ``err``); TypeError for anything else."""
        if not isinstance(code, ErrorCode):
            raise TypeError(f"err() takes an ErrorCode, got {code!r}")
        return Result(False, None, code)


# ``ok``/``err`` are aliases of static methods, not top-level functions: a test-suite connector
# that turns covered top-level functions into tasks must not pick the conventions themselves.
ok = Result.success
err = Result.failure


@dataclass(frozen=True, order=True)
class Money:
    """An amount in integer cents (may be negative). ``Money(1250)`` is 12.50."""

    cents: int

    def __post_init__(self) -> None:
        if type(self.cents) is not int:
            raise TypeError(f"Money holds integer cents, got {self.cents!r}")


@dataclass(frozen=True)
class Account:
    """A ledger account: ``id`` like 'ACC-000042', ``owner`` name, ``balance``, ``closed`` flag."""

    id: str
    owner: str
    balance: Money
    closed: bool = False


@dataclass(frozen=True)
class Line:
    """One invoice line: ``sku``, ``qty`` units at unit ``price``."""

    sku: str
    qty: int
    price: Money


@dataclass(frozen=True)
class Invoice:
    """An invoice: ``number`` like 'INV-2024-0007', a tuple of ``lines``, and a ``paid`` flag."""

    number: str
    lines: tuple[Line, ...] = ()
    paid: bool = False
