"""Reading JSONL files of frozen records, one shared way: blank lines skipped, a bad line named."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

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
