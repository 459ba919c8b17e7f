"""JSON and JSONL files, one shared way: frozen records read with blank lines skipped and a bad line
named; JSON written atomically; JSONL rows written sorted-key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, TypeVar

from pydantic import BaseModel

from sdk.errors import TuneloopError

M = TypeVar("M", bound=BaseModel)


def read_models(path: str | Path, model: type[M], error: type[TuneloopError], fix: str,
                missing_ok: bool = False) -> list[M]:
    """Validate every non-blank line of ``path`` as ``model``.

    Args:
        missing_ok: a missing file gives ``[]`` instead of an error.
    Raises:
        error: the file is missing (unless ``missing_ok``) or a line is not a valid ``model``;
            the message names ``path:line`` and carries ``fix``.
    """
    path = Path(path)
    if not path.is_file():
        if missing_ok:
            return []
        raise error(f"{path} does not exist", fix)
    out: list[M] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate_json(line))
        except ValueError as exc:
            raise error(f"{path}:{n} is not a valid {model.__name__}: {str(exc).splitlines()[0]}", fix) from exc
    return out


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON atomically (a temporary file renamed over ``path``);
    parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    """Write one JSON object per line (keys sorted, non-ASCII kept); parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
