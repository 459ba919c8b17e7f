"""Departmental budgets: allocation, spend tracking and variance."""

from acme_ledger.core import ErrorCode, Money, Result, err, ok


def remaining_budget(budget: Money, spent: Money, committed: Money) -> Result:
    """budget minus what is spent and what is committed (ordered, not yet paid); NEGATIVE if the
    two exceed the budget."""
    used = spent.cents + committed.cents
    if used > budget.cents:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(budget.cents - used))


def utilisation_pct(budget: Money, spent: Money) -> Result:
    """spent as a whole percentage of budget, rounded down; ZERO if budget is 0."""
    if budget.cents == 0:
        return err(ErrorCode.ZERO)
    return ok(spent.cents * 100 // budget.cents)


def variance(planned: Money, actual: Money) -> Result:
    """actual minus planned as Money (negative when under plan)."""
    return ok(Money(actual.cents - planned.cents))


def over_budget(budgets: dict, spend: dict) -> Result:
    """Sorted departments whose spend (Money) exceeds their budget (Money); missing spend is 0."""
    return ok(sorted(d for d, b in budgets.items() if spend.get(d, Money(0)).cents > b.cents))


def allocate(total: Money, weights: dict) -> Result:
    """total split by integer weights, each share rounded down, the leftover cents to the
    alphabetically first department; EMPTY if no weights, ZERO if they sum to 0."""
    if not weights:
        return err(ErrorCode.EMPTY)
    wsum = sum(weights.values())
    if wsum == 0:
        return err(ErrorCode.ZERO)
    shares = {d: total.cents * w // wsum for d, w in weights.items()}
    first = min(shares)
    shares[first] += total.cents - sum(shares.values())
    return ok({d: Money(c) for d, c in shares.items()})


def monthly_run_rate(spent: Money, months: int) -> Result:
    """Average spend per month, rounded down; ZERO if months is 0, NEGATIVE if months < 0."""
    if months == 0:
        return err(ErrorCode.ZERO)
    if months < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(Money(spent.cents // months))


def forecast_year_end(spent: Money, months_elapsed: int) -> Result:
    """spent extrapolated to 12 months at the current run rate (rounded down); INVALID unless
    1 <= months_elapsed <= 12."""
    if not 1 <= months_elapsed <= 12:
        return err(ErrorCode.INVALID)
    return ok(Money(spent.cents * 12 // months_elapsed))


def approve_expense(remaining: Money, amount: Money, limit: Money) -> Result:
    """True when amount fits both the remaining budget and the approval limit; ZERO if amount is 0,
    NEGATIVE if amount < 0."""
    if amount.cents == 0:
        return err(ErrorCode.ZERO)
    if amount.cents < 0:
        return err(ErrorCode.NEGATIVE)
    return ok(amount.cents <= remaining.cents and amount.cents <= limit.cents)


def largest_spender(spend: dict) -> Result:
    """The department with the highest spend (Money), ties by name; EMPTY if no spend."""
    if not spend:
        return err(ErrorCode.EMPTY)
    return ok(sorted(spend.items(), key=lambda kv: (-kv[1].cents, kv[0]))[0][0])


def budget_code(department: str, year: int) -> Result:
    """'BUD-<DEPT>-<year>' with the first three letters of department upper-cased; INVALID if the
    department has fewer than three letters or year is outside 2000..2099."""
    letters = "".join(ch for ch in department if ch.isalpha())
    if len(letters) < 3 or not 2000 <= year <= 2099:
        return err(ErrorCode.INVALID)
    return ok(f"BUD-{letters[:3].upper()}-{year}")
