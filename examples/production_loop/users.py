"""The example's world: a support bot's questions and a deterministic simulated user population.

The users prefer one behaviour: an answer that opens with a one-line summary, ``TL;DR: ...``.
Each user's temperament is fixed by a hash of their id (no randomness, the same every run):

* 10 % are never satisfied (they rate every answer down),
* 10 % are always satisfied (they rate every answer up),
* the other 80 % rate an answer up exactly when it opens with ``TL;DR``; when they rate one down,
  they write back the answer they wanted (a correction: the summary line, then the answer).

So the best possible positive-rating rate is 0.9 and an answer without the summary gets 0.1.
"""

from __future__ import annotations

import hashlib

# (question, one-line summary, answer) — the bot's knowledge; the first 16 are asked by users
# (their corrections become training data), the last 6 are held out for the trainer's gate.
QA = [
    ("How do I reverse a list in Python?", "use reversed() or slicing.", "Call xs.reverse() in place or use xs[::-1]."),
    ("How do I read a file line by line?", "iterate over the open file.", "with open(p) as f: then for line in f."),
    ("How do I sort a dict by value?", "sorted() with a key.", "sorted(d.items(), key=lambda kv: kv[1])."),
    ("How do I merge two dicts?", "use the | operator.", "merged = a | b (Python 3.9+), or {**a, **b}."),
    ("How do I check if a key is in a dict?", "use the in operator.", "Write if key in d: ..."),
    ("How do I remove duplicates from a list?", "go through a dict or set.", "list(dict.fromkeys(xs)) keeps order."),
    ("How do I join strings with commas?", "use str.join.", "Write ', '.join(words)."),
    ("How do I get the length of a list?", "use len().", "len(xs) returns the number of items."),
    ("How do I format a float to 2 decimals?", "use an f-string.", "Write f'{x:.2f}'."),
    ("How do I get the current date?", "use datetime.date.today().", "from datetime import date; date.today()."),
    ("How do I count words in a string?", "split and count.", "len(text.split()) counts the words."),
    ("How do I make a copy of a list?", "use list() or copy().", "ys = list(xs) or ys = xs.copy()."),
    ("How do I loop with an index?", "use enumerate().", "for i, x in enumerate(xs): ..."),
    ("How do I convert a string to int?", "use int().", "int('42') returns 42."),
    ("How do I find the max of a list?", "use max().", "max(xs) returns the largest item."),
    ("How do I write to a file?", "open it in write mode.", "with open(p, 'w') as f: f.write(text)."),
    ("How do I square every number in a list?", "use a comprehension.", "[x * x for x in xs]."),
    ("How do I split a string on spaces?", "use str.split().", "text.split() returns the words."),
    ("How do I check if a list is empty?", "test its truth value.", "Write if not xs: ..."),
    ("How do I get unique items of a list?", "use set().", "set(xs) holds each item once."),
    ("How do I upper-case a string?", "use str.upper().", "text.upper() returns it in capitals."),
    ("How do I add an item to a list?", "use append().", "xs.append(item) adds it at the end."),
]
ASKED, HELD_OUT = QA[:16], QA[16:]
USERS = [f"user-{i:02d}" for i in range(40)]


def temperament(user: str) -> str:
    """``grumpy``, ``easy`` or ``picky`` (the 80 % that want the summary first), fixed by the id."""
    k = int(hashlib.sha256(user.encode()).hexdigest(), 16) % 10
    return {0: "grumpy", 1: "easy"}.get(k, "picky")


def wanted(reply: str) -> bool:
    """The behaviour the users prefer: the answer opens with ``TL;DR``."""
    return reply.lstrip().upper().startswith("TL;DR")


def likes(user: str, reply: str) -> bool:
    """Whether ``user`` rates ``reply`` up."""
    kind = temperament(user)
    return kind == "easy" or (kind == "picky" and wanted(reply))


def correction(user: str, question: str, reply: str) -> str | None:
    """The answer a picky user writes back for a reply they rated down (None: they write nothing)."""
    if temperament(user) != "picky" or wanted(reply):
        return None
    _, summary, answer = next(qa for qa in QA if qa[0] == question)
    return f"TL;DR: {summary}\n{answer}"


def question_for(user: str, turn: int) -> str:
    """The question ``user`` asks on ``turn`` (deterministic, spread over the asked questions)."""
    return ASKED[(USERS.index(user) + 7 * turn) % len(ASKED)][0]
