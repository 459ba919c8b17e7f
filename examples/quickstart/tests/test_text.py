"""Tests for acme_ledger.text (text clean-up): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Result
from acme_ledger.text import normalize_name
from acme_ledger.text import slugify
from acme_ledger.text import initials
from acme_ledger.text import truncate_text
from acme_ledger.text import count_words
from acme_ledger.text import mask_email
from acme_ledger.text import is_blank
from acme_ledger.text import pad_code
from acme_ledger.text import split_fields
from acme_ledger.text import reverse_words
from acme_ledger.text import first_word


def test_normalize_name_title():
    r = normalize_name('  ada LOVELACE ')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'Ada Lovelace'


def test_normalize_name_single():
    r = normalize_name('grace')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'Grace'


def test_normalize_name_blank():
    r = normalize_name('   ')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_slugify_words():
    r = slugify('Quarterly Report 2024')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'quarterly-report-2024'


def test_slugify_extra_spaces():
    r = slugify('  Net   Terms ')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'net-terms'


def test_slugify_blank():
    r = slugify('')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_initials_two_words():
    r = initials('ada lovelace')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'AL'


def test_initials_three_words():
    r = initials('Mary Ann Evans')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'MAE'


def test_initials_blank():
    r = initials(' ')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_truncate_text_cut():
    r = truncate_text('Hello world', 8)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'Hello...'


def test_truncate_text_fits():
    r = truncate_text('Hi', 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'Hi'


def test_truncate_text_limit_too_small():
    r = truncate_text('Hello', 2)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_count_words_three():
    r = count_words('pay the invoice')
    assert isinstance(r, Result) and r.ok
    assert r.value == 3


def test_count_words_spaces():
    r = count_words('  a   b ')
    assert isinstance(r, Result) and r.ok
    assert r.value == 2


def test_count_words_empty():
    r = count_words('')
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_mask_email_masks():
    r = mask_email('jane@acme.test')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'j***@acme.test'


def test_mask_email_one_char_user():
    r = mask_email('x@acme.test')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'x@acme.test'


def test_mask_email_no_at():
    r = mask_email('jane.acme.test')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_is_blank_empty():
    r = is_blank('')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_blank_spaces():
    r = is_blank(' \t ')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_blank_text():
    r = is_blank(' a ')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_pad_code_pads():
    r = pad_code('42', 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == '00042'


def test_pad_code_exact():
    r = pad_code('12345', 5)
    assert isinstance(r, Result) and r.ok
    assert r.value == '12345'


def test_pad_code_too_long():
    r = pad_code('123456', 5)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.TOO_LARGE


def test_split_fields_strips():
    r = split_fields('a, b ,c')
    assert isinstance(r, Result) and r.ok
    assert r.value == ['a', 'b', 'c']


def test_split_fields_one():
    r = split_fields('solo')
    assert isinstance(r, Result) and r.ok
    assert r.value == ['solo']


def test_split_fields_blank():
    r = split_fields('  ')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_reverse_words_three():
    r = reverse_words('one two three')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'three two one'


def test_reverse_words_spaces():
    r = reverse_words('  a  b ')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'b a'


def test_reverse_words_empty():
    r = reverse_words('')
    assert isinstance(r, Result) and r.ok
    assert r.value == ''


def test_first_word_sentence():
    r = first_word('invoice sent today')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'invoice'


def test_first_word_leading_spaces():
    r = first_word('   net 30')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'net'


def test_first_word_blank():
    r = first_word('  ')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY
