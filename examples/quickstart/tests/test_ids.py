"""Tests for acme_ledger.ids (identifiers): value and house conventions (Result, ok/err, Money)."""

from acme_ledger.core import ErrorCode, Result
from acme_ledger.ids import make_account_id
from acme_ledger.ids import make_invoice_number
from acme_ledger.ids import parse_account_id
from acme_ledger.ids import is_valid_sku
from acme_ledger.ids import id_prefix
from acme_ledger.ids import checksum_digit
from acme_ledger.ids import short_ref
from acme_ledger.ids import join_ref
from acme_ledger.ids import customer_code
from acme_ledger.ids import is_test_id
from acme_ledger.ids import batch_id


def test_make_account_id_pads():
    r = make_account_id(42)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'ACC-000042'


def test_make_account_id_zero():
    r = make_account_id(0)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'ACC-000000'


def test_make_account_id_negative():
    r = make_account_id(-1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE


def test_make_invoice_number_pads():
    r = make_invoice_number(2024, 7)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'INV-2024-0007'


def test_make_invoice_number_max():
    r = make_invoice_number(2023, 9999)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'INV-2023-9999'


def test_make_invoice_number_too_large():
    r = make_invoice_number(2024, 10000)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.TOO_LARGE


def test_parse_account_id_number():
    r = parse_account_id('ACC-000042')
    assert isinstance(r, Result) and r.ok
    assert r.value == 42


def test_parse_account_id_zero():
    r = parse_account_id('ACC-000000')
    assert isinstance(r, Result) and r.ok
    assert r.value == 0


def test_parse_account_id_wrong_prefix():
    r = parse_account_id('INV-000042')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_is_valid_sku_valid():
    r = is_valid_sku('SKU-0420')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_valid_sku_too_short():
    r = is_valid_sku('SKU-042')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_valid_sku_letters():
    r = is_valid_sku('SKU-04A0')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_id_prefix_account():
    r = id_prefix('ACC-000042')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'ACC'


def test_id_prefix_first_dash_only():
    r = id_prefix('INV-2024-0007')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'INV'


def test_id_prefix_no_dash():
    r = id_prefix('ACC000042')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_checksum_digit_sum():
    r = checksum_digit('123')
    assert isinstance(r, Result) and r.ok
    assert r.value == 6


def test_checksum_digit_wraps():
    r = checksum_digit('99')
    assert isinstance(r, Result) and r.ok
    assert r.value == 8


def test_checksum_digit_not_digits():
    r = checksum_digit('12a')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_short_ref_last_four():
    r = short_ref('inv-2024-ab12')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'AB12'


def test_short_ref_exact():
    r = short_ref('wxyz')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'WXYZ'


def test_short_ref_too_short():
    r = short_ref('abc')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_join_ref_joins():
    r = join_ref('PO', 17)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'PO/17'


def test_join_ref_zero():
    r = join_ref('RMA', 0)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'RMA/0'


def test_join_ref_blank():
    r = join_ref(' ', 3)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.EMPTY


def test_customer_code_three():
    r = customer_code('acme')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'ACM'


def test_customer_code_exact():
    r = customer_code('Bob')
    assert isinstance(r, Result) and r.ok
    assert r.value == 'BOB'


def test_customer_code_short():
    r = customer_code('Al')
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.INVALID


def test_is_test_id_test():
    r = is_test_id('TEST-0001')
    assert isinstance(r, Result) and r.ok
    assert r.value is True


def test_is_test_id_real():
    r = is_test_id('ACC-000001')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_is_test_id_lower_case():
    r = is_test_id('test-0001')
    assert isinstance(r, Result) and r.ok
    assert r.value is False


def test_batch_id_builds():
    r = batch_id('2024-05-01', 3)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'B20240501-3'


def test_batch_id_zero():
    r = batch_id('2023-12-31', 0)
    assert isinstance(r, Result) and r.ok
    assert r.value == 'B20231231-0'


def test_batch_id_negative():
    r = batch_id('2024-05-01', -1)
    assert isinstance(r, Result) and not r.ok
    assert r.error is ErrorCode.NEGATIVE
