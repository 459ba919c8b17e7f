"""Reading code out of a model's completion (field cases P1, P2).

Models wrap code in prose, Markdown fences (sometimes broken), thinking sections and usage
examples. :func:`extract_code` returns the code the completion *means* as its answer:

- ``<think>…</think>`` (and ``<thinking>``) sections are dropped; an unclosed one hides
  everything after it; a stray ``</think>`` drops everything before it (templates that
  open the section in the prompt).
- The text is cut at every fence line (```` ``` ```` or ``~~~``, with or without a language
  tag, or a fence glued to the end of a code line). Every piece is a candidate, so a stray
  closing fence (code, then ```` ``` ````) and an opening fence never closed both still
  yield their code.
- With an ``entry_point``, the last candidate that *defines* it wins (a later block that
  only calls it, the "Example:" of P1, is not the answer); helpers it calls that another
  block defines are carried over. Without one, the last candidate that parses and defines
  something wins, else the longest that parses.
- Bare code without fences is found from its first ``def``/``class``/``import`` line,
  trailing prose trimmed until it parses.
- Duplicate top-level definitions keep Python's semantics, last wins: earlier copies are
  removed so that splicing the entry point into a module is unambiguous; the same policy holds
  for the brace languages (:mod:`sdk.rewards.definitions`, field case P3).
- With an ``entry_point``, top-level demo code (``print(...)``, calls of the completion's own
  functions, ``assert``, ``if __name__ == "__main__":``) is removed (``demo_code_removed``).
- A completion with nothing that looks like code is ``NO_CODE``, distinct from wrong code.

The approach follows evalplus' ``sanitize`` (pick the block defining the entry point, keep
needed helpers) with a line-based fence scanner that tolerates broken Markdown.
"""

from __future__ import annotations

import ast
import re
import textwrap
from enum import Enum

from sdk.rewards.definitions import dedupe_braced, drop_demo_code
from sdk.types import Frozen, Language

_THINK_BLOCK = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(think|thinking)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(think|thinking)>", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+#.-]*)\s*$")
_GLUED_CLOSE = re.compile(r"^(.*\S)\s*(`{3,}|~{3,})\s*$")
_CODE_START = re.compile(r"^(def |async def |class |import |from \S+ import |@)")
_TAGS = {
    Language.PYTHON: {"python", "py", "python3", "py3"},
    Language.JAVASCRIPT: {"javascript", "js", "node"},
    Language.TYPESCRIPT: {"typescript", "ts"},
    Language.C: {"c", "h"},
    Language.CPP: {"cpp", "c++", "cc", "cxx"},
    Language.JAVA: {"java"},
    Language.GO: {"go", "golang"},
    Language.RUST: {"rust", "rs"},
}


class ExtractStatus(str, Enum):
    """``OK``: code found (it may still fail to compile); ``NO_CODE``: nothing code-like."""

    OK = "ok"
    NO_CODE = "no_code"


class Extraction(Frozen):
    """What :func:`extract_code` found.

    Attributes:
        code: the code to run, or ``None`` when ``status`` is ``NO_CODE``.
        status: see :class:`ExtractStatus`.
        notes: what was repaired or chosen, e.g. ``thinking_removed``, ``unclosed_fence``,
            ``stray_fence``, ``several_blocks``, ``chose_defining_block``, ``unfenced``,
            ``duplicate_definition:add``, ``helpers_from_other_blocks``.
    """

    code: str | None
    status: ExtractStatus
    notes: tuple[str, ...] = ()


class _Piece:
    __slots__ = ("fenced", "tag", "text")

    def __init__(self, text: str, tag: str, fenced: bool) -> None:
        self.text, self.tag, self.fenced = text, tag, fenced


def extract_code(completion: str, entry_point: str | None = None,
                 language: Language = Language.PYTHON) -> Extraction:
    """Extract the answer code from ``completion``; see the module docstring for the rules.

    Args:
        completion: the model's raw text (one assistant turn).
        entry_point: the function/class name the answer must define, when known.
        language: the task's language; Python is parsed with :mod:`ast`, other languages are
            chosen by fence tag and a textual search for ``entry_point``.
    Returns:
        an :class:`Extraction`; never raises on any string input.
    """
    notes: list[str] = []
    text = _strip_thinking(completion or "", notes)
    pieces = _split_fences(text, notes)
    if not any(p.text.strip() for p in pieces):
        return Extraction(code=None, status=ExtractStatus.NO_CODE, notes=tuple(notes))
    if language == Language.PYTHON:
        code = _choose_python(pieces, entry_point, notes)
        code = drop_demo_code(code, notes) if code and entry_point else code
    else:
        code = _choose_other(pieces, entry_point, language, notes)
        code = dedupe_braced(code, language, notes) if code else code
    if code is None or not code.strip():
        return Extraction(code=None, status=ExtractStatus.NO_CODE, notes=tuple(notes))
    return Extraction(code=code.strip("\n") + "\n", status=ExtractStatus.OK, notes=tuple(notes))


def _strip_thinking(text: str, notes: list[str]) -> str:
    out = _THINK_BLOCK.sub("", text)
    if out != text:
        notes.append("thinking_removed")
    opened = _THINK_OPEN.search(out)
    if opened:  # never closed: everything after it is still thinking
        notes.append("unclosed_thinking")
        out = out[:opened.start()]
    closes = list(_THINK_CLOSE.finditer(out))
    if closes:  # opened in the prompt / chat template
        notes.append("stray_think_close")
        out = out[closes[-1].end():]
    return out


def _split_fences(text: str, notes: list[str]) -> list[_Piece]:
    """Cut at fence lines; pieces alternate outside/inside by the scanner's state."""
    pieces: list[_Piece] = []
    buf: list[str] = []
    inside, tag, fences = False, "", 0
    for line in text.splitlines():
        m = _FENCE_LINE.match(line)
        glued = None if m or not inside else _GLUED_CLOSE.match(line)
        if glued and not line.lstrip().startswith(("`", "~")):
            buf.append(glued.group(1))
            m = glued
        if not m:
            buf.append(line)
            continue
        fences += 1
        pieces.append(_Piece("\n".join(buf), tag, inside))
        buf = []
        if inside:
            inside, tag = False, ""
        else:
            inside, tag = True, (m.group(2) or "").lower() if m is not glued else ""
    pieces.append(_Piece("\n".join(buf), tag, inside))
    if inside and "\n".join(buf).strip():
        notes.append("unclosed_fence")
    if fences and not any(p.fenced and p.text.strip() for p in pieces):
        notes.append("stray_fence")
    if sum(1 for p in pieces if p.fenced and p.text.strip()) > 1:
        notes.append("several_blocks")
    return [p for p in pieces if p.text.strip()]


def _choose_python(pieces: list[_Piece], entry_point: str | None, notes: list[str]) -> str | None:
    parsed: list[tuple[_Piece, str, ast.Module]] = []
    for piece in pieces:
        if piece.tag and piece.tag not in _TAGS[Language.PYTHON]:
            continue
        code, tree = _parse_python(piece.text, piece.fenced)
        if tree is not None:
            parsed.append((piece, code, tree))
    if not parsed:
        fenced = [p for p in pieces if p.fenced and (not p.tag or p.tag in _TAGS[Language.PYTHON])]
        if fenced:  # a fenced block that does not parse is wrong code, not missing code
            return textwrap.dedent(max(fenced, key=lambda p: len(p.text)).text)
        return None
    if not any(p.fenced for p, _, _ in parsed):
        notes.append("unfenced")
    chosen = None
    if entry_point:
        defining = [x for x in parsed if entry_point in _defined_names(x[2])]
        if defining:
            chosen = defining[-1]
            if chosen is not parsed[-1]:
                notes.append("chose_defining_block")
    if chosen is None:
        with_defs = [x for x in parsed if _defined_names(x[2])]
        chosen = with_defs[-1] if with_defs else max(parsed, key=lambda x: len(x[1]))
    code = _add_helpers(chosen, parsed, notes)
    return _dedupe_definitions(code, notes)


def _parse_python(text: str, fenced: bool) -> tuple[str, ast.Module | None]:
    code = textwrap.dedent(text).strip("\n")
    try:
        return code, ast.parse(code)
    except SyntaxError:
        pass
    lines = code.splitlines()
    start = next((i for i, ln in enumerate(lines) if _CODE_START.match(ln)), None)
    if start is None:
        return code, None
    # trim trailing prose (a stray fence's tail, an explanation) until it parses
    for end in range(len(lines), start, -1):
        candidate = "\n".join(lines[start:end])
        try:
            return candidate, ast.parse(candidate)
        except SyntaxError:
            continue
    return code, None


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _add_helpers(chosen: tuple[_Piece, str, ast.Module], parsed: list, notes: list[str]) -> str:
    """Prepend definitions and imports from other blocks for names the chosen block uses."""
    _, code, tree = chosen
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    have = _defined_names(tree) | _imported(tree)
    extra: list[str] = []
    for _, other_code, other in parsed:
        if other is tree:
            continue
        for node in other.body:
            name = getattr(node, "name", None)
            is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            imported = _imported(ast.Module(body=[node], type_ignores=[])) if isinstance(node, (ast.Import, ast.ImportFrom)) else set()
            wanted = (is_def and name in used - have) or (imported & (used - have))
            if wanted:
                extra.append(ast.get_source_segment(other_code, node) or "")
                have |= {name} if is_def else imported
    if not extra:
        return code
    notes.append("helpers_from_other_blocks")
    return "\n\n".join([*extra, code])


def _imported(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def _dedupe_definitions(code: str, notes: list[str]) -> str:
    """Keep only the last top-level definition of each function/class name."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    last: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            last[node.name] = node
    drop: list[tuple[int, int]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and last[node.name] is not node:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            drop.append((first, node.end_lineno or node.lineno))
            notes.append(f"duplicate_definition:{node.name}")
    if not drop:
        return code
    lines = code.splitlines()
    keep = [ln for i, ln in enumerate(lines, 1) if not any(a <= i <= b for a, b in drop)]
    return "\n".join(keep)


def _choose_other(pieces: list[_Piece], entry_point: str | None, language: Language,
                  notes: list[str]) -> str | None:
    tags = _TAGS.get(language, set())
    fenced = [p for p in pieces if p.fenced and (not p.tag or p.tag in tags)]
    pool = fenced or [p for p in pieces if not p.fenced]
    if not fenced:
        notes.append("unfenced")
    if entry_point:
        pattern = re.compile(rf"\b{re.escape(entry_point)}\b\s*[(<{{]")
        defining = [p for p in pool if pattern.search(p.text)]
        if defining:
            return textwrap.dedent(defining[-1].text)
    return textwrap.dedent(max(pool, key=lambda p: len(p.text)).text) if pool else None
