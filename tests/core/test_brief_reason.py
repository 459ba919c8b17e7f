"""The build summary's one-line quarantine examples keep the cause of a long reason."""
from sdk.run.stage_tasks import brief_reason


def test_long_collection_error_keeps_its_last_error_line():
    reason = ("ImportError while loading conftest '/work/tests/conftest.py'.\n" + "  at line\n" * 40
              + "tests/conftest.py:3: in <module>\n    from coerce import coerce\n"
              + "E   ModuleNotFoundError: No module named 'coerce'\n")
    got = brief_reason(reason)
    assert got.startswith("ImportError while loading conftest")
    assert got.endswith("ModuleNotFoundError: No module named 'coerce'")
    assert len(got) <= 170 and "\n" not in got


def test_short_reason_is_kept_whole_on_one_line():
    assert brief_reason("reference fails:\n  assert 1 == 2") == "reference fails: assert 1 == 2"


def test_long_reason_without_an_error_line_ends_with_its_last_line():
    reason = "x" * 300 + "\nthe last line says why"
    got = brief_reason(reason)
    assert got.endswith("the last line says why") and len(got) <= 170
