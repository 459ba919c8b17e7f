"""`tasks build` on a library of classes only (new-user trial: a `Cart` class, its methods tested): the
pytest source skips methods by default, so nothing came; the refusal names `methods: true` instead of
'check each source's path/URL'."""
from sdk.run.stage_tasks import _nothing_read


def test_skipped_methods_are_named_with_the_option_that_makes_them_tasks():
    counts = {"0:pytest:cart": {"functions_found": 4, "methods_skipped": 4, "tasks": 0}}
    err = _nothing_read([], counts)
    assert "pytest:cart: 4 method(s) skipped (`methods: false`, the default)" in err.what
    assert err.fix.startswith("set `methods: true`") and "--set sources.0.options.methods=true" in err.fix


def test_without_skipped_methods_the_generic_fix_stays():
    err = _nothing_read([], {"0:jsonl:x": {"rows_read": 0, "tasks": 0}})
    assert "method" not in err.what and err.fix.startswith("check each source's path/URL")
