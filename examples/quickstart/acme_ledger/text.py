"""Text clean-up for names, labels and free-text fields."""

from acme_ledger.core import ErrorCode, Result, err, ok


def normalize_name(name: str) -> Result:
    """name trimmed and title-cased; EMPTY if blank."""
    if not name.strip():
        return err(ErrorCode.EMPTY)
    return ok(name.strip().title())


def slugify(text: str) -> Result:
    """Lower-case words joined by '-'; EMPTY if blank."""
    if not text.strip():
        return err(ErrorCode.EMPTY)
    return ok("-".join(text.lower().split()))


def initials(name: str) -> Result:
    """Upper-case first letters of the words ('ada lovelace' -> 'AL'); EMPTY if blank."""
    if not name.strip():
        return err(ErrorCode.EMPTY)
    return ok("".join(w[0].upper() for w in name.split()))


def truncate_text(text: str, limit: int) -> Result:
    """text cut to limit chars, the last 3 being '...' if cut; INVALID if limit < 3."""
    if limit < 3:
        return err(ErrorCode.INVALID)
    return ok(text if len(text) <= limit else text[: limit - 3] + "...")


def count_words(text: str) -> Result:
    """Number of whitespace-separated words in text."""
    return ok(len(text.split()))


def mask_email(email: str) -> Result:
    """'j***@x.org' for 'jane@x.org'; INVALID without '@'."""
    if "@" not in email:
        return err(ErrorCode.INVALID)
    user, domain = email.split("@", 1)
    return ok(user[:1] + "*" * (len(user) - 1) + "@" + domain)


def is_blank(text: str) -> Result:
    """True if text is empty or only whitespace."""
    return ok(not text.strip())


def pad_code(code: str, width: int) -> Result:
    """code left-padded with zeros to width; TOO_LARGE if it is longer than width."""
    if len(code) > width:
        return err(ErrorCode.TOO_LARGE)
    return ok(code.zfill(width))


def split_fields(line: str) -> Result:
    """Comma-separated fields of line, each stripped; EMPTY if blank."""
    if not line.strip():
        return err(ErrorCode.EMPTY)
    return ok([f.strip() for f in line.split(",")])


def reverse_words(text: str) -> Result:
    """The words of text in reverse order, joined by single spaces."""
    return ok(" ".join(reversed(text.split())))


def first_word(text: str) -> Result:
    """The first word of text; EMPTY if there is none."""
    words = text.split()
    if not words:
        return err(ErrorCode.EMPTY)
    return ok(words[0])
