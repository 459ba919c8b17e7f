"""The plug-in point for connectors: a :class:`TaskSource` turns the outside world into records.

Connectors live outside ``sdk`` (in ``connectors/`` or a user's own package) and are found by
name through the ``tuneloop.sources`` entry-point group, or by a dotted path
``package.module:ClassName`` in the config. The base class owns the public call
(:meth:`TaskSource.read`: option validation, error wrapping, counting); an implementer
overrides one hook, :meth:`TaskSource._load` (the shape of langchain-core's
``BaseRetriever._get_relevant_documents``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sdk.errors import ConfigError, SourceError
from sdk.tasks.records import Frozen, Message, Quarantined, Source, Task

ENTRY_POINT_GROUP = "tuneloop.sources"


class SftExample(Frozen):
    """A supervised example: chat ``messages`` whose last message is the assistant target."""

    messages: tuple[Message, ...]
    source: Source
    domain: str = "feedback"
    weight: float = 1.0


class PreferencePair(Frozen):
    """A preference pair for DPO: ``prompt`` messages, ``chosen`` and ``rejected`` completions."""

    prompt: tuple[Message, ...]
    chosen: str
    rejected: str
    source: Source
    domain: str = "feedback"


@dataclass
class SourceResult:
    """What one source yields: tasks, SFT examples, preference pairs, quarantine and counts.

    ``splits_fixed``: the tasks' ``split`` is the source's own decision (e.g. ``git_history``'s
    time-honest split: older commits train, newer held out); the pipeline keeps it when the
    config's ``split`` is ``auto`` instead of splitting by hash.
    """

    tasks: list[Task] = field(default_factory=list)
    sft_examples: list[SftExample] = field(default_factory=list)
    preference_pairs: list[PreferencePair] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    splits_fixed: bool = False


class SourceOptions(BaseModel):
    """Base for connector options: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid")


class TaskSource:
    """Base class for connectors.

    Subclasses set ``Options`` (a :class:`SourceOptions` subclass) and override :meth:`_load`.

    Args:
        options: raw option mapping from the config; validated against ``Options``.
        base_dir: folder that relative paths in the options are resolved against (the
            config file's folder).
        domain: default domain for produced tasks.
    Raises:
        ConfigError: the options do not validate.
    """

    Options: ClassVar[type[SourceOptions]] = SourceOptions
    name: ClassVar[str] = "source"

    def __init__(self, options: dict[str, Any] | None, base_dir: Path, domain: str) -> None:
        try:
            self.options = self.Options.model_validate(options or {})
        except ValidationError as exc:
            raise ConfigError(f"options of source {self.name!r} are invalid:\n{_fmt(exc, list(self.Options.model_fields))}",
                              f"fix the keys under `options:` of that source (allowed: {', '.join(self.Options.model_fields)})") from exc
        self.base_dir = Path(base_dir)
        self.domain = domain

    def resolve(self, path: str | Path) -> Path:
        """``path`` resolved against the config folder."""
        path = Path(path).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def read(self) -> SourceResult:
        """Load the source. Bad rows are quarantined; only unreadable sources raise.

        Raises:
            SourceError: the source as a whole cannot be read (missing folder, bad URL...).
        """
        try:
            result = self._load()
        except (SourceError, ConfigError):
            raise
        except Exception as exc:  # noqa: BLE001 - wrap into one boundary error
            raise SourceError(f"source {self.name!r} failed: {type(exc).__name__}: {exc}",
                              "check the source's options; set TUNELOOP_DEBUG=1 for the traceback") from exc
        result.counts.setdefault("tasks", len(result.tasks))
        result.counts.setdefault("sft_examples", len(result.sft_examples))
        result.counts.setdefault("quarantined", len(result.quarantined))
        return result

    def _load(self) -> SourceResult:  # pragma: no cover - interface
        raise NotImplementedError


def import_dotted(path: str) -> Any:
    """The object at ``package.module:attr``.

    Raises:
        ConfigError: the module or attribute cannot be imported.
    """
    module_name, sep, attr = path.partition(":")
    if not sep:
        raise ConfigError(f"{path!r} is not a dotted path", "write `package.module:name`")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{path!r} cannot be imported ({exc})",
                          "use `package.module:name` of an installed package or a module on PYTHONPATH") from exc


def resolve_source(type_name: str) -> type[TaskSource]:
    """Find a source class by entry-point name or ``module:Class`` path.

    Raises:
        ConfigError: no such entry point or class.
    """
    if ":" in type_name:
        return import_dotted(type_name)
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if type_name not in found:
        import difflib

        guess = difflib.get_close_matches(type_name, list(found), n=1)
        raise ConfigError(f"unknown source type {type_name!r}"
                          + (f" (did you mean {guess[0]!r}?)" if guess else ""),
                          f"use one of {sorted(found)} or a dotted path `package.module:ClassName`"
                          + ("" if found else " (no connectors installed: run `pip install -e .`)"))
    return found[type_name].load()


def _fmt(exc: ValidationError, allowed: list[str] | None = None) -> str:
    """One line per problem: the key, what is wrong, the value given, and for an unknown key the
    closest allowed one (``did you mean``)."""
    import difflib

    lines = []
    for e in exc.errors():
        loc = ".".join(map(str, e["loc"])) or "(root)"
        if e["type"] == "extra_forbidden":
            guess = difflib.get_close_matches(str(e["loc"][-1]), allowed or [], n=1)
            lines.append(f"  - unknown option `{loc}`" + (f" (did you mean `{guess[0]}`?)" if guess else ""))
        else:
            value = repr(e.get("input"))
            lines.append(f"  - `{loc}`: {e['msg']} (got {value[:80]})")
    return "\n".join(lines)
