"""Test methods a test class inherits from classes of its own module (issue 17; stdlib only).

pytest names an inherited test after the class it collects it from (``t.py::Peekable::test_x``
for ``test_x`` defined in a mixin ``Base``), while the function's code is ``Base.test_x``'s. The
witness (:func:`tl_witness.test_codes`) accepts, for such a node, the fingerprints of the
ancestors' functions: the same pristine code pytest runs. Bases are matched by name among the
module's top-level classes (a base imported from another module is not followed).
"""

import ast


def inherited(source):
    """``{"C.test_m": ["A.test_m", ...]}``: for each top-level class ``C`` of the module text
    ``source``, the test methods (``test*``) it does not define itself that a top-level class of
    the same module among its bases (transitively) defines; every such ancestor is listed. Empty
    when the module does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    own = {c: {f.name for f in n.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
               and f.name.startswith("test")} for c, n in classes.items()}
    bases = {c: [b.id for b in n.bases if isinstance(b, ast.Name) and b.id in classes and b.id != c]
             for c, n in classes.items()}
    out = {}
    for c in classes:
        seen, todo = set(), list(bases[c])
        while todo:
            a = todo.pop(0)
            if a in seen:
                continue
            seen.add(a)
            todo.extend(bases[a])
            for m in sorted(own[a] - own[c]):
                out.setdefault(c + "." + m, []).append(a + "." + m)
    return out
