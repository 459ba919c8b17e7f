"""A small Go git repository built in a temporary folder, for the ``git_history`` Go tests.

Module ``example.com/shop``; commits, oldest first (fixed dates):

1. ``root``: ``calc`` (``Add``, ``TestAdd``) and ``stats`` (``Sum`` over ``calc.Add``, ``TestSum``).
2. ``good``: "Add Mul" — ``calc/ops.go`` and a new ``calc/mul.go`` (two files) and ``TestMul``.
3. ``broken``: "Add fmtx" — a package whose test calls ``Padd``, which does not exist: its tests
   cannot build.
4. ``docs``: README only.
5. ``newer``: "Div returns an error on zero" — ``calc/div.go`` and ``calc/errors.go``, ``TestDiv``.

``stats`` imports ``calc``, so its ``TestSum`` is the pass-to-pass test of both tasks (a ``calc``
test that references a symbol the parent lacks stops the whole ``calc`` test package building
there, so ``calc``'s own older tests are neither fail-to-pass nor pass-to-pass).
"""

from __future__ import annotations

from pathlib import Path

from tests.connectors.history_repo import commit, git

GO_MOD = "module example.com/shop\n\ngo 1.19\n"
OPS = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
OPS_MUL = OPS + "\n// Mul returns a * b.\nfunc Mul(a, b int) int {\n\treturn mulLoop(a, b)\n}\n"
MUL = ("package calc\n\nfunc mulLoop(a, b int) int {\n\tt := 0\n\tfor i := 0; i < b; i++ {\n\t\tt = Add(t, a)\n\t}\n"
       "\treturn t\n}\n")
TEST_OPS = ("package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n"
            "\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n")
TEST_MUL = TEST_OPS + "\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(\"Mul(2, 3) != 6\")\n\t}\n}\n"
STATS = ("package stats\n\nimport \"example.com/shop/calc\"\n\n// Sum adds xs.\nfunc Sum(xs ...int) int {\n\tt := 0\n"
         "\tfor _, x := range xs {\n\t\tt = calc.Add(t, x)\n\t}\n\treturn t\n}\n")
TEST_STATS = ("package stats\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(1, 2, 3) != 6 {\n"
              "\t\tt.Fatal(\"Sum\")\n\t}\n}\n")
ERRORS = "package calc\n\nimport \"errors\"\n\n// ErrZero is returned by Div for a zero divisor.\nvar ErrZero = errors.New(\"division by zero\")\n"
DIV = ("package calc\n\n// Div returns a / b, or ErrZero.\nfunc Div(a, b int) (int, error) {\n\tif b == 0 {\n"
       "\t\treturn 0, ErrZero\n\t}\n\treturn a / b, nil\n}\n")
TEST_DIV = ("package calc\n\nimport \"testing\"\n\nfunc TestDiv(t *testing.T) {\n\tif q, err := Div(6, 3); q != 2 || err != nil {\n"
            "\t\tt.Fatal(q, err)\n\t}\n\tif _, err := Div(1, 0); err != ErrZero {\n\t\tt.Fatal(err)\n\t}\n}\n")


def build(repo: Path) -> dict[str, str]:
    """Build the repository; ``name -> commit sha``."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    shas = {"root": commit(repo, {"go.mod": GO_MOD, "calc/ops.go": OPS, "calc/ops_test.go": TEST_OPS,
                                  "stats/stats.go": STATS, "stats/stats_test.go": TEST_STATS, "README.md": "shop\n"},
                           "Initial shop", 1)}
    shas["good"] = commit(repo, {"calc/ops.go": OPS_MUL, "calc/mul.go": MUL, "calc/ops_test.go": TEST_MUL},
                          "Add Mul\n\nMul(a, b) multiplies by repeated addition.", 2)
    shas["broken"] = commit(repo, {"fmtx/fmtx.go": "package fmtx\n\n// Pad pads s.\nfunc Pad(s string) string {\n"
                                                   "\treturn \" \" + s\n}\n",
                                   "fmtx/fmtx_test.go": "package fmtx\n\nimport \"testing\"\n\nfunc TestPad(t *testing.T) {\n"
                                                        "\tif Padd(\"a\") != \" a\" {\n\t\tt.Fatal(\"pad\")\n\t}\n}\n"},
                            "Add fmtx", 3)
    shas["docs"] = commit(repo, {"README.md": "shop: calc and stats\n"}, "Docs", 4)
    shas["newer"] = commit(repo, {"calc/errors.go": ERRORS, "calc/div.go": DIV, "calc/div_test.go": TEST_DIV},
                           "Div returns an error on zero", 5)
    return shas
