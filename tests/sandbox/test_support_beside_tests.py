"""Helper modules beside tests in a non-package folder travel with the tests (pytest's prepend mode)."""
from sdk.sandbox.python_lang import support_beside_tests


def test_helpers_beside_tests_in_a_plain_folder_travel():
    files = {"tests/coerce.py": "", "tests/data.txt": "", "pkg/mod.py": "", "setup.py": ""}
    assert support_beside_tests(files, ["tests/test_a.py"]) == {"tests/coerce.py"}


def test_a_test_package_keeps_its_helpers_in_the_working_folder():
    files = {"tests/__init__.py": "", "tests/strategies.py": ""}
    assert support_beside_tests(files, ["tests/test_a.py"]) == set()


def test_root_level_modules_never_travel():
    assert support_beside_tests({"mod.py": "", "helper.py": ""}, ["test_mod.py"]) == set()
