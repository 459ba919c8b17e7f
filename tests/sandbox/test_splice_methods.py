"""Splicing a method (`Class.method` entry points) into its class."""

import pytest

from sdk.sandbox.splice import SpliceError, splice

ORIG = '''"""m"""


class Acc:
    def __init__(self, x):
        self.x = x

    @property
    def double(self):
        return self.x * 3

    def other(self):
        return 1
'''


def load(source):
    ns = {}
    exec(compile(source, "t.py", "exec"), ns)  # trusted test source, not model output
    return ns["Acc"]


@pytest.mark.parametrize("solution", [
    "@property\ndef double(self):\n    return self.x * 2\n",
    "class Acc:\n    @property\n    def double(self):\n        return self.x * 2\n",
])
def test_method_replaced_in_place(solution):
    acc = load(splice(ORIG, solution, "Acc.double"))
    assert acc(4).double == 8 and acc(1).other() == 1


def test_missing_method_or_class_is_an_error():
    with pytest.raises(SpliceError, match="does not define `double`"):
        splice(ORIG, "def triple(self):\n    return 3\n", "Acc.double")
    with pytest.raises(SpliceError, match="no method `Nope.double`"):
        splice(ORIG, "def double(self):\n    return 3\n", "Nope.double")
