"""Repository context for pytest-source prompts: what the reference uses that the model cannot guess.

For each task the reference is read with ``ast``: the names it loads and the attributes it
reads. Each is resolved against an index of the package's top-level definitions
(:class:`RepoIndex`): helper functions (signature + docstring; without a docstring, its first two
``return`` lines), classes and dataclasses (header,
docstring, fields, method signatures), enums (members), module constants (the assignment), and
methods reached through an attribute (``x.total()``) when the call trace of the task's tests ran
``Class.total`` (the static pass cannot know ``x``'s class). Definitions are ranked (called
helpers in order of first use, then types, then constants, then traced methods) and cut to a
token budget (4 characters a token), then shown under the instruction. Where the target's callers
set its contract (a private helper, or no docstring / a one-line one), its call sites in the package
follow, within what the budget leaves (:mod:`connectors.suites.callsites`). Where the target has no
docstring or a one-line one, its visible tests are shown as examples (as MBPP does;
:mod:`connectors.suites.examples`), through a caller's tests when none mentions it.

The lookup is a langchain-core ``BaseRetriever`` (:class:`RepoContextRetriever`): the query is the
reference's source; keyword arguments ``path``, ``qualname`` and ``traced`` are passed to
retrievers that accept them. A company plugs in its own code search with the source option
``repo_context.retriever: package.module:factory`` — ``factory(files=..., package_dir=...)``
must return a ``BaseRetriever`` whose documents carry ``metadata["name"]`` (the name defined);
their order is kept and the same token budget applies.

Coverage (per task in ``metadata["context"]``, per source in the counts): of the repository names
the reference uses that have a definition in the package, the share whose definition the prompt
shows (a definition already in the prompt, e.g. with ``context: module``, counts as shown); 1.0
when it uses none.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import BaseModel, ConfigDict, Field

from connectors.suites.callsites import CallSiteIndex, needs_callers, render_callers
from connectors.suites.examples import example_block
from connectors.suites.keys import KeyIndex, keys_defined, keys_read, render_keys
from connectors.suites.pylayout import traced_path
from sdk.errors import ConfigError
from sdk.sources import import_dotted
from sdk.tasks.records import Message, Task

_RANK = {"function": 0, "dataclass": 1, "enum": 1, "class": 1, "constant": 2, "method": 3}
_BUILTINS = set(dir(builtins))


class RepoContextOptions(BaseModel):
    """The ``repo_context:`` option of the pytest source.

    Attributes:
        enabled: add the context block to every prompt.
        token_budget: most tokens (4 characters each) of definitions shown per prompt.
        examples: show visible tests as examples (:mod:`connectors.suites.examples`) when the target has
            no docstring or a one-line one, or (``examples_when: no_example``, the default) a docstring
            with no ``>>>`` example: on isodate 0.7.2 a three-line docstring left the sign convention of
            negative durations to the tests alone; ``short_docstring`` keeps the old rule.
        max_example_lines: at most this many ``assert`` lines shown.
        max_example_test_lines: at most this many lines of whole test functions, shown when no
            ``assert`` line calls the target.
        callers: show the target's call sites in the package when its callers set its contract (a
            private helper, or no docstring / a one-line one; :mod:`connectors.suites.callsites`),
            within what ``token_budget`` leaves after the definitions it uses.
        max_callers: at most this many callers shown.
        keys: show the lines that set the string keys the reference reads (regex group names, dict
            keys) in the helpers it uses, and its callers' lines that read the keys it defines
            (:mod:`connectors.suites.keys`), within what ``token_budget`` leaves.
        retriever: ``package.module:factory`` of a company's own retriever (see the module docstring).
    """

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    token_budget: int = Field(800, ge=0, le=32_000)
    examples: bool = True
    examples_when: Literal["no_example", "short_docstring"] = "no_example"
    max_example_lines: int = Field(6, ge=0, le=50)
    max_example_test_lines: int = Field(24, ge=0, le=200)
    callers: bool = True
    max_callers: int = Field(2, ge=0, le=10)
    keys: bool = True
    retriever: str | None = None


@dataclass(frozen=True)
class Definition:
    """One top-level definition of the package: what the prompt would show for ``name``."""

    name: str
    qualname: str
    path: str
    kind: str
    text: str


def _header_and_doc(lines: list[str], node: ast.AST) -> list[str]:
    body0 = node.body[0]
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    doc = ast.get_docstring(node, clean=False)
    end = body0.end_lineno if doc is not None else body0.lineno - 1
    out = lines[start - 1: max(end, node.lineno)]
    return out if doc is not None or out[-1].rstrip().endswith(":") else out[:1]


def _class_text(lines: list[str], node: ast.ClassDef, kind: str) -> str:
    out = _header_and_doc(lines, node)
    for stmt in node.body:
        if isinstance(stmt, (ast.AnnAssign, ast.Assign)):
            out += lines[stmt.lineno - 1: stmt.end_lineno][:3]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and kind != "enum":
            head = lines[stmt.lineno - 1: stmt.body[0].lineno - 1] or [lines[stmt.lineno - 1]]
            out += [*head[:4], " " * (stmt.col_offset + 4) + "..."]
    return "\n".join(out)


def _kind(node: ast.ClassDef) -> str:
    names = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
    decos = {ast.unparse(d).split("(")[0].split(".")[-1] for d in node.decorator_list}
    if names & {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}:
        return "enum"
    return "dataclass" if decos & {"dataclass", "define", "attrs", "frozen"} or "NamedTuple" in names else "class"


class RepoIndex:
    """Top-level definitions (and methods) of a package's modules, by simple name.

    Args:
        files: ``relative path -> source`` (non-Python and unparsable files are skipped).
        pkg_rel: the package folder relative to the repository (only files under it are read).
    """

    def __init__(self, files: dict[str, str], pkg_rel: str = "") -> None:
        self.by_name: dict[str, list[Definition]] = {}
        for path, text in sorted(files.items()):
            if path.endswith(".py") and path.startswith(pkg_rel):
                self._scan(path, text)

    def _add(self, d: Definition) -> None:
        self.by_name.setdefault(d.name, []).append(d)

    def _scan(self, path: str, text: str) -> None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        lines = text.splitlines()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                text = "\n".join(_header_and_doc(lines, node)) + _returns(lines, node)
                self._add(Definition(node.name, node.name, path, "function", text))
            elif isinstance(node, ast.ClassDef):
                kind = _kind(node)
                self._add(Definition(node.name, node.name, path, kind, _class_text(lines, node, kind)))
                for m in node.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and not m.name.startswith("__"):
                        text_m = "\n".join(_header_and_doc(lines, m))
                        self._add(Definition(m.name, f"{node.name}.{m.name}", path, "method",
                                             f"# method of {node.name}\n" + _dedent(text_m)))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and not t.id.startswith("__"):
                        seg = "\n".join(lines[node.lineno - 1: node.end_lineno])
                        self._add(Definition(t.id, t.id, path, "constant", seg if len(seg) < 400 else seg[:400] + " ..."))


def _returns(lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef, most: int = 2) -> str:
    """For a function without a docstring, its first distinct ``return`` lines (its own, not nested
    functions'): what it gives back is its contract (``return strings, padfn``), or a note that it
    returns no value (it works in place); ``""`` when it has a docstring."""
    if ast.get_docstring(fn) is not None:
        return ""
    found: list[tuple[int, str]] = []
    todo = list(fn.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Return) and node.value is not None:
            found.append((node.lineno, lines[node.lineno - 1].strip()))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.excepthandler))]
    pad = " " * (fn.col_offset + 4)
    if not found and not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn)):
        return f"\n{pad}...  # returns no value"
    shown = list(dict.fromkeys(text for _, text in sorted(found)))[:most]
    return "".join(f"\n{pad}...\n{pad}{r}" if i == 0 else f"\n{pad}{r}" for i, r in enumerate(shown))


def _dedent(text: str) -> str:
    lines = text.splitlines()
    pad = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[pad:] for x in lines)


def names_used(reference: str) -> tuple[list[str], list[str]]:
    """``(names, attributes)`` the reference loads, in order of first use, without its own
    parameters, locals and builtins. Raises nothing: unparsable code uses no names."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return [], []
    local = {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
             for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, *filter(None, [n.vararg, n.kwarg])]}
    local |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute))),
                   key=lambda n: (n.lineno, n.col_offset))
    names = [n.id for n in nodes if isinstance(n, ast.Name) and n.id not in local and n.id not in _BUILTINS]
    attrs = [n.attr for n in nodes if isinstance(n, ast.Attribute)]
    return list(dict.fromkeys(names)), list(dict.fromkeys(attrs))


def resolve(index: RepoIndex, reference: str, path: str, qualname: str,
            traced: Iterable[tuple[str, str]] = ()) -> list[Definition]:
    """The package definitions ``reference`` uses, ranked; the target itself excluded."""
    names, attrs = names_used(reference)
    traced = set(traced)
    found: list[Definition] = []
    for name in names:
        defs = [d for d in index.by_name.get(name, []) if d.kind != "method"]
        same = [d for d in defs if d.path == path]
        found += (same or defs)[:1]
    for attr in attrs:  # module.helper, Enum.MEMBER's class is a Name already; methods only when traced
        defs = index.by_name.get(attr, [])
        found += [d for d in defs if d.kind != "method" and d.kind != "constant"][:1]
        found += [d for d in defs if d.kind == "method" and (d.path, d.qualname) in traced][:1]
    unique = list({(d.path, d.qualname): d for d in found if (d.path, d.qualname) != (path, qualname)}.values())
    return sorted(unique, key=lambda d: _RANK[d.kind])  # stable: first use within a rank


class RepoContextRetriever(BaseRetriever):
    """Static (+ traced) repository context as a langchain-core retriever; query = the reference."""

    index: Any
    token_budget: int = 800

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                path: str = "", qualname: str = "", traced: Iterable = ()) -> list[Document]:
        docs = [Document(page_content=d.text, metadata={"name": d.name, "qualname": d.qualname, "path": d.path,
                                                        "kind": d.kind, "rank": i})
                for i, d in enumerate(resolve(self.index, query, path, qualname, traced))]
        return cut_to_budget(docs, self.token_budget)


def cut_to_budget(docs: list[Document], token_budget: int) -> list[Document]:
    """``docs`` in order, each kept while its tokens (characters / 4) still fit the budget."""
    out, used = [], 0
    for doc in docs:
        cost = len(doc.page_content) // 4 + 1
        if used + cost <= token_budget:
            out.append(doc)
            used += cost
    return out


class RepoContext:
    """Adds the context block to pytest-source tasks and counts coverage (see the module docstring).

    Raises:
        ConfigError: ``retriever`` cannot be imported or does not give a ``BaseRetriever``.
    """

    def __init__(self, options: RepoContextOptions, files: dict[str, str], pkg_rel: str, package_dir=None) -> None:
        self.options, self.index, self.pkg_rel = options, RepoIndex(files, pkg_rel), pkg_rel
        self.callsites, self.keys = CallSiteIndex(files, pkg_rel), KeyIndex(files, pkg_rel)
        self.retriever: BaseRetriever = RepoContextRetriever(index=self.index, token_budget=options.token_budget)
        if options.retriever:
            try:
                made = import_dotted(options.retriever)(files=files, package_dir=package_dir)
            except TypeError as exc:
                raise ConfigError(f"repo_context.retriever {options.retriever!r} cannot be called as "
                                  f"factory(files=..., package_dir=...): {exc}",
                                  "point it at a factory that returns a langchain_core BaseRetriever") from exc
            if not isinstance(made, BaseRetriever):
                raise ConfigError(f"repo_context.retriever {options.retriever!r} gave a {type(made).__name__}",
                                  "point it at a factory that returns a langchain_core BaseRetriever")
            self.retriever = made

    def add(self, task: Task, items: Iterable = (), counts: dict[str, int] | None = None) -> Task:
        """``task`` with the context block appended to its last prompt message and
        ``metadata["context"]`` (used, shown, coverage, tokens, missing, examples); ``items`` are
        the traced test items (``.calls``) of its tests; ``counts`` gets the per-source totals."""
        if not self.options.enabled or not task.reference:
            return task
        path, _, qualname = task.source.locator.partition("::")
        traced = {(traced_path(self.pkg_rel, p), q) for i in items for p, q, *_ in getattr(i, "calls", ())}
        docs = self.retriever.invoke(task.reference, path=path, qualname=qualname, traced=traced)
        docs = cut_to_budget(docs, self.options.token_budget)
        block = _render(docs)
        spent = sum(len(d.page_content) // 4 + 1 for d in docs)
        sites = self._callers(task.reference, path, qualname, self.options.token_budget - spent)
        block += render_callers(sites)
        spent += sum(len(c.text) // 4 + 1 for c in sites)
        content = task.prompt[-1].content
        keys, key_tokens = self._keys(task.reference, path, qualname, docs, "\n".join([content, block]),
                                      self.options.token_budget - spent)
        block += keys
        examples = self._examples(task, qualname, [c.caller.split(".")[-1] for c in sites])
        shown_text = "\n".join([content, block])
        used = resolve(self.index, task.reference, path, qualname, traced)
        shown = {d.metadata.get("name") for d in docs}
        missing = [d.qualname for d in used if d.name not in shown and not _appears(d, shown_text)]
        info = {"used": len(used), "shown": len(used) - len(missing), "missing": missing,
                "coverage": round((len(used) - len(missing)) / len(used), 4) if used else 1.0,
                "tokens": spent + key_tokens, "examples": bool(examples), "keys": bool(keys),
                "callers": [c.caller for c in sites]}
        if counts is not None:
            counts["context_names_used"] += info["used"]
            counts["context_names_shown"] += info["shown"]
            counts["context_tasks_fully_covered"] += info["coverage"] == 1.0
        new = content + block + examples
        prompt = (*task.prompt[:-1], Message(role=task.prompt[-1].role, content=new))
        return task.with_(prompt=prompt, metadata={**task.metadata, "context": info})

    def _callers(self, reference: str, path: str, qualname: str, budget: int) -> list:
        """Ranked call sites of the target that fit ``budget`` tokens, when its callers set its contract."""
        if not self.options.callers or not needs_callers(reference, qualname):
            return []
        sites = self.callsites.callers(qualname.split(".")[-1], path, qualname, self.options.max_callers)
        out = []
        for site in sites:
            cost = len(site.text) // 4 + 1
            if cost <= budget:
                out.append(site)
                budget -= cost
        return out

    def _keys(self, reference: str, path: str, qualname: str, docs: list[Document], shown: str,
              budget: int) -> tuple[str, int]:
        """The lines that set the string keys the reference reads (in the definitions shown), or that
        read the keys it defines (in its callers), as fit ``budget`` tokens (:mod:`connectors.suites.keys`);
        ``(block, tokens)``."""
        if not self.options.keys:
            return "", 0
        out, spent = [], 0
        for reading, keys in ((False, keys_read(reference)), (True, keys_defined(reference))):
            if reading:
                found = self.keys.reading(qualname.split(".")[-1], path, qualname, keys)
            else:
                used = [(d.metadata.get("path", ""), d.metadata.get("qualname", "")) for d in docs]
                found = self.keys.defining(used, keys)
            found = [s for s in found if any(x not in shown for x in s.lines)]
            fit = []
            for snip in found:
                cost = len(snip.text) // 4 + 1
                if spent + cost <= budget:
                    fit.append(snip)
                    spent += cost
            out.append(render_keys(fit, keys, reading))
        return "".join(out), spent

    def _examples(self, task: Task, qualname: str, callers: list[str]) -> str:
        fn = ast.parse(task.reference).body if _parses(task.reference) else []
        name = qualname.split(".")[-1]
        target = next((n for n in fn if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
        doc = ast.get_docstring(target) if target is not None else None
        lines = [x for x in (doc or "").splitlines() if x.strip()]
        shows = any(x.lstrip().startswith(">>>") for x in lines) if self.options.examples_when == "no_example" else True
        if not self.options.examples or target is None or (len(lines) > 1 and shows):
            return ""
        hop = [c.caller.split(".")[-1] for who in callers for c in self.callsites.callers(who, "", "", 4)]
        hop = [h for h in dict.fromkeys(hop) if h not in callers and h != name and not h.startswith("__")]
        documented = len(lines) > 1   # then only assert lines with a literal (no whole tests)
        return example_block(task.verifier.tests, name, [*callers, *hop], self.options.max_example_lines,
                             0 if documented else self.options.max_example_test_lines, literal=documented)


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except SyntaxError:
        return False


def _appears(d: Definition, text: str) -> bool:
    first = d.text.splitlines()[0].strip() if d.text else ""
    return bool(first) and first in text


def _render(docs: list[Document]) -> str:
    if not docs:
        return ""
    parts = [f"# {d.metadata.get('path', '')}: {d.metadata.get('kind', 'definition')} "
             f"{d.metadata.get('qualname', d.metadata.get('name', ''))}\n{d.page_content.rstrip()}" for d in docs]
    return ("\n\nFrom the repository (definitions it uses; bodies omitted):\n```python\n"
            + "\n\n".join(parts) + "\n```")


__all__ = ["Definition", "RepoContext", "RepoContextOptions", "RepoContextRetriever", "RepoIndex", "cut_to_budget",
           "names_used", "resolve"]
