"""Raw material for ``seed_feedback.py``: helpers users asked the coding assistant for.

Every helper follows acme_ledger's conventions (see ``acme_ledger/core.py``) but none is a
function of the package: the feedback teaches the house style without leaking held-out
tasks. ``tests/examples/test_quickstart_content.py`` checks that no name here exists in the
package. ``HELPERS`` maps a module of acme_ledger (the file the user was editing) to entries
``(name, params, docstring, body lines)``; the naive variant a base model would write is
derived from each in ``seed_feedback.naive_version``.
"""

HELPERS: dict[str, list[tuple[str, str, str, list[str]]]] = {
    "money": [
        ("negate_money", "m: Money", "m with its sign flipped.", ["return ok(Money(-m.cents))"]),
        ("abs_money", "m: Money", "m without its sign.", ["return ok(Money(abs(m.cents)))"]),
        ("is_negative_money", "m: Money", "True if m is below zero.", ["return ok(m.cents < 0)"]),
        ("whole_units", "m: Money", "Whole units of m, cents dropped.", ["return ok(m.cents // 100)"]),
        (
            "add_tip",
            "m: Money, pct: int",
            "m plus a pct percent tip, rounded down; INVALID if pct > 50.",
            ["if pct > 50:", "    return err(ErrorCode.INVALID)", "return ok(Money(m.cents + m.cents * pct // 100))"],
        ),
        (
            "money_gap",
            "a: Money, b: Money",
            "Distance between two amounts.",
            ["return ok(Money(abs(a.cents - b.cents)))"],
        ),
        (
            "cap_amount",
            "m: Money, limit: Money",
            "m, but never more than limit.",
            ["return ok(Money(min(m.cents, limit.cents)))"],
        ),
        (
            "average_amount",
            "items: list[Money]",
            "Mean of the amounts, rounded down; EMPTY if none.",
            [
                "if not items:",
                "    return err(ErrorCode.EMPTY)",
                "return ok(Money(sum(m.cents for m in items) // len(items)))",
            ],
        ),
        (
            "count_nonzero",
            "items: list[Money]",
            "How many amounts are not zero.",
            ["return ok(sum(1 for m in items if m.cents != 0))"],
        ),
        (
            "cents_only",
            "m: Money",
            "The cents part of m, 0 to 99; NEGATIVE if m < 0.",
            ["if m.cents < 0:", "    return err(ErrorCode.NEGATIVE)", "return ok(m.cents % 100)"],
        ),
        (
            "quarter_share",
            "m: Money",
            "A quarter of m, rounded down; ZERO if m is zero.",
            ["if m.cents == 0:", "    return err(ErrorCode.ZERO)", "return ok(Money(m.cents // 4))"],
        ),
    ],
    "dates": [
        (
            "is_month_end",
            "d: date",
            "True if d is the last day of its month.",
            ["return ok((d + timedelta(days=1)).day == 1)"],
        ),
        ("week_number", "d: date", "ISO week number of d.", ["return ok(d.isocalendar()[1])"]),
        ("previous_day", "d: date", "The day before d.", ["return ok(d - timedelta(days=1))"]),
        (
            "is_leap_year",
            "year: int",
            "True if year is a leap year; NEGATIVE if year < 0.",
            [
                "if year < 0:",
                "    return err(ErrorCode.NEGATIVE)",
                "return ok(year % 4 == 0 and (year % 100 != 0 or year % 400 == 0))",
            ],
        ),
        ("day_name", "d: date", "English name of d's weekday, like 'Monday'.", ["return ok(d.strftime('%A'))"]),
        (
            "parse_year_month",
            "text: str",
            "(2024, 5) from '2024-05'; INVALID otherwise.",
            [
                "parts = text.split('-')",
                "if len(parts) != 2 or not all(p.isdigit() for p in parts):",
                "    return err(ErrorCode.INVALID)",
                "return ok((int(parts[0]), int(parts[1])))",
            ],
        ),
        ("half_year", "d: date", "1 for January to June, else 2.", ["return ok(1 if d.month <= 6 else 2)"]),
        (
            "is_same_month",
            "a: date, b: date",
            "True if a and b fall in the same month of the same year.",
            ["return ok(a.year == b.year and a.month == b.month)"],
        ),
    ],
    "accounts": [
        ("account_label", "acct: Account", "'<id> (<owner>)' for acct.", ["return ok(f'{acct.id} ({acct.owner})')"]),
        ("is_closed_account", "acct: Account", "True if acct is closed.", ["return ok(acct.closed)"]),
        (
            "reopen_account",
            "acct: Account",
            "acct marked open again; INVALID if it is open.",
            ["if not acct.closed:", "    return err(ErrorCode.INVALID)", "return ok(replace(acct, closed=False))"],
        ),
        (
            "charge_fee",
            "acct: Account, fee: Money",
            "acct with fee taken off, even below zero; CLOSED if closed.",
            [
                "if acct.closed:",
                "    return err(ErrorCode.CLOSED)",
                "return ok(replace(acct, balance=Money(acct.balance.cents - fee.cents)))",
            ],
        ),
        (
            "owners_of",
            "accts: list[Account]",
            "The owners of the accounts, in order.",
            ["return ok([a.owner for a in accts])"],
        ),
        (
            "count_closed",
            "accts: list[Account]",
            "How many accounts are closed.",
            ["return ok(sum(1 for a in accts if a.closed))"],
        ),
        (
            "accounts_above",
            "accts: list[Account], limit: Money",
            "Accounts whose balance is over limit.",
            ["return ok([a for a in accts if a.balance.cents > limit.cents])"],
        ),
        (
            "zero_balance",
            "acct: Account",
            "acct with its balance set to zero; CLOSED if closed.",
            ["if acct.closed:", "    return err(ErrorCode.CLOSED)", "return ok(replace(acct, balance=Money(0)))"],
        ),
    ],
    "invoices": [
        (
            "invoice_skus",
            "inv: Invoice",
            "The skus of inv's lines, in order.",
            ["return ok([line.sku for line in inv.lines])"],
        ),
        (
            "first_line",
            "inv: Invoice",
            "The first line of inv; EMPTY if it has none.",
            ["if not inv.lines:", "    return err(ErrorCode.EMPTY)", "return ok(inv.lines[0])"],
        ),
        (
            "clear_lines",
            "inv: Invoice",
            "inv without any lines; CLOSED if it is paid.",
            ["if inv.paid:", "    return err(ErrorCode.CLOSED)", "return ok(replace(inv, lines=()))"],
        ),
        (
            "set_quantity",
            "line: Line, qty: int",
            "line with a new qty; INVALID if qty < 1.",
            ["if qty < 1:", "    return err(ErrorCode.INVALID)", "return ok(replace(line, qty=qty))"],
        ),
        (
            "discount_line",
            "line: Line, pct: int",
            "line with its price cut by pct percent, rounded down.",
            ["return ok(replace(line, price=Money(line.price.cents * (100 - pct) // 100)))"],
        ),
        (
            "count_paid",
            "invs: list[Invoice]",
            "How many invoices are paid.",
            ["return ok(sum(1 for i in invs if i.paid))"],
        ),
        (
            "total_lines",
            "invs: list[Invoice]",
            "Number of lines over all the invoices.",
            ["return ok(sum(len(i.lines) for i in invs))"],
        ),
        (
            "has_sku",
            "inv: Invoice, sku: str",
            "True if a line of inv has that sku.",
            ["return ok(any(line.sku == sku for line in inv.lines))"],
        ),
        (
            "cheapest_price",
            "inv: Invoice",
            "Lowest unit price on inv; EMPTY if no lines.",
            [
                "if not inv.lines:",
                "    return err(ErrorCode.EMPTY)",
                "return ok(min((line.price for line in inv.lines), key=lambda p: p.cents))",
            ],
        ),
    ],
    "text": [
        (
            "shout",
            "text: str",
            "text upper-cased with '!' added; EMPTY if text is empty.",
            ["if not text:", "    return err(ErrorCode.EMPTY)", "return ok(text.upper() + '!')"],
        ),
        (
            "collapse_spaces",
            "text: str",
            "text with runs of whitespace made one space, trimmed.",
            ["return ok(' '.join(text.split()))"],
        ),
        (
            "capitalize_first",
            "text: str",
            "text with its first letter upper-cased; EMPTY if empty.",
            ["if not text:", "    return err(ErrorCode.EMPTY)", "return ok(text[:1].upper() + text[1:])"],
        ),
        (
            "count_vowels",
            "text: str",
            "How many vowels text has.",
            ["return ok(sum(c in 'aeiou' for c in text.lower()))"],
        ),
        (
            "strip_digits",
            "text: str",
            "text without its digits.",
            ["return ok(''.join(c for c in text if not c.isdigit()))"],
        ),
        (
            "longest_word",
            "text: str",
            "The longest word of text; EMPTY if there is none.",
            [
                "words = text.split()",
                "if not words:",
                "    return err(ErrorCode.EMPTY)",
                "return ok(max(words, key=len))",
            ],
        ),
        ("quote_text", "text: str", "text wrapped in double quotes.", ["return ok(f'\"{text}\"')"]),
    ],
    "ids": [
        (
            "parse_ref",
            "ref: str",
            "17 from 'PO/17'; INVALID if there is no number after '/'.",
            [
                "head, _, tail = ref.partition('/')",
                "if not tail.isdigit():",
                "    return err(ErrorCode.INVALID)",
                "return ok(int(tail))",
            ],
        ),
        (
            "ref_year",
            "ref: str",
            "2024 from 'ORD2024-017'; INVALID unless ref starts with 'ORD'.",
            ["if not ref.startswith('ORD'):", "    return err(ErrorCode.INVALID)", "return ok(int(ref[3:7]))"],
        ),
        (
            "upper_ident",
            "ident: str",
            "ident upper-cased with spaces removed; EMPTY if blank.",
            ["if not ident.strip():", "    return err(ErrorCode.EMPTY)", "return ok(ident.replace(' ', '').upper())"],
        ),
        ("is_numeric_id", "ident: str", "True if ident is only digits and not empty.", ["return ok(ident.isdigit())"]),
        (
            "digit_count",
            "ident: str",
            "How many digits ident contains.",
            ["return ok(sum(c.isdigit() for c in ident))"],
        ),
    ],
    "tax": [
        (
            "round_to_nickel",
            "m: Money",
            "m rounded down to a multiple of 5 cents.",
            ["return ok(Money(m.cents // 5 * 5))"],
        ),
        (
            "reduced_rate",
            "rate_bp: int",
            "Half of rate_bp, rounded down; NEGATIVE if rate_bp < 0.",
            ["if rate_bp < 0:", "    return err(ErrorCode.NEGATIVE)", "return ok(rate_bp // 2)"],
        ),
        ("is_high_rate", "rate_bp: int", "True if rate_bp is 20% or more.", ["return ok(rate_bp >= 2000)"]),
        (
            "add_surcharge",
            "m: Money",
            "m plus a 3% surcharge, rounded down.",
            ["return ok(Money(m.cents + m.cents * 3 // 100))"],
        ),
        (
            "bp_to_percent",
            "rate_bp: int",
            "rate_bp in whole percent, rounded down; NEGATIVE if below 0.",
            ["if rate_bp < 0:", "    return err(ErrorCode.NEGATIVE)", "return ok(rate_bp // 100)"],
        ),
    ],
    "fx": [
        (
            "same_currency",
            "a: str, b: str",
            "True if a and b are the same code, ignoring case.",
            ["return ok(a.upper() == b.upper())"],
        ),
        (
            "cross_rate",
            "a_bp: int, b_bp: int",
            "Rate a times rate b in basis points, rounded down.",
            ["return ok(a_bp * b_bp // 10000)"],
        ),
        (
            "bid_from_mid",
            "mid_bp: int, spread: int",
            "Bid rate: mid minus half the spread; NEGATIVE if spread < 0.",
            ["if spread < 0:", "    return err(ErrorCode.NEGATIVE)", "return ok(mid_bp - spread // 2)"],
        ),
    ],
}

#: Sentences with personal data that users pasted into prompts (redaction must remove them).
PII_NOTES: list[str] = [
    "I'm jane.roe@example.com if anything is unclear.",
    "Customer called from (555) 010-4477 about this, order #123-456.",
    "Ping Tom on +44 20 7946 0958 or tom.hale@acme-corp.example before Friday.",
    "Bug came in via jane.roe%40example.com on 2024-05-01.",
    "Reporter: li.wei@example.org, phone 555-010-9921.",
    "Vendor contact +1 415 555 0134, SSN on file 000-12-3456 (test data).",
    "cc omar.s@example.net please",
    "From ticket by m.kowalski@example.com, callback (555) 010-7788.",
]

#: Questions to another internal assistant that share the table (filter on ``app``).
OFF_TOPIC: list[tuple[str, str]] = [
    (
        "How many vacation days carry over to next year?",
        "Up to five unused days carry over; the rest expire on March 31.",
    ),
    ("Where do I find my payslip?", "Payslips are in the HR portal under Documents > Pay."),
    ("Is the office open on Dec 24?", "The office closes at noon on December 24."),
    ("How do I book a meeting room?", "Use the Rooms tab in the calendar and pick a free slot."),
    ("Can I expense a monitor for home?", "Yes, up to 250.00 with your manager's approval."),
    ("Who approves travel requests?", "Your cost-center owner approves travel requests."),
]
