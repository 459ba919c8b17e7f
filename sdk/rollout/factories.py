"""Tools from the ``tools:`` section: dotted paths, zero-argument factories, and configured factories.

Three ways to name tools in a config, from the simplest:

* ``tools.tools``: dotted paths ``package.module:obj`` of a langchain-core ``BaseTool`` or a typed
  function, used as they are;
* ``tools.factories`` entries that are strings: dotted paths of zero-argument callables returning
  one tool or a list of them;
* ``tools.factories`` entries ``{type: package.module:Class, options: {...}}``: a
  :class:`ToolFactory` subclass, for tools that need settings (a database URL, a file relative to
  the config). The base class owns the public call (option validation, path resolution, error
  wrapping); an implementer sets ``Options`` and overrides one hook, :meth:`ToolFactory._tools`
  (the shape of :class:`sdk.sources.TaskSource`).

:func:`build_tools` turns a section into :class:`~sdk.rollout.tools.Tool` objects. It runs once per
stage that rolls out (rl, eval), in the trainer's process: a factory must not run model-written code
itself (see :func:`sdk.rollout.tools.sandboxed_python_tool`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sdk.errors import ConfigError
from sdk.rollout.config import ToolFactoryConfig, ToolsConfig
from sdk.rollout.errors import ToolError
from sdk.rollout.tools import Tool, as_tool
from sdk.sources import import_dotted


class ToolFactoryOptions(BaseModel):
    """Base for a factory's options: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid")


class ToolFactory:
    """Base class of configured tool factories.

    Subclasses set ``Options`` (a :class:`ToolFactoryOptions` subclass) and override :meth:`_tools`.

    Args:
        options: the raw ``options:`` mapping; validated against ``Options``.
        base_dir: folder that relative paths in the options are resolved against (the config's).
        settings: the whole ``tools:`` section (``retrieval_k``, ``max_result_chars``...).
    Raises:
        ConfigError: the options do not validate.
    """

    Options: ClassVar[type[ToolFactoryOptions]] = ToolFactoryOptions

    def __init__(self, options: dict[str, Any] | None, base_dir: Path, settings: ToolsConfig) -> None:
        try:
            self.options = self.Options.model_validate(options or {})
        except ValidationError as exc:
            errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"options of tool factory {type(self).__name__} are invalid: {errors}",
                              f"fix the keys under `options:` of that factory (allowed: "
                              f"{', '.join(self.Options.model_fields) or 'none'})") from exc
        self.base_dir = Path(base_dir)
        self.settings = settings

    def resolve(self, path: str | Path) -> Path:
        """``path`` resolved against the config folder (``~`` expanded)."""
        path = Path(path).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def tools(self) -> list[Tool]:
        """The factory's tools as :class:`Tool` objects.

        Raises:
            ToolError: the hook raised, or returned something that is not a tool.
        """
        try:
            made = self._tools()
        except (ToolError, ConfigError):
            raise
        except Exception as exc:  # noqa: BLE001 - one boundary error, with the factory named
            raise ToolError(f"tool factory {type(self).__name__} failed: {type(exc).__name__}: {exc}",
                            "check the factory's options; set TUNELOOP_DEBUG=1 for the traceback") from exc
        return [as_tool(t) for t in _as_list(made)]

    def _tools(self) -> list[Any]:  # pragma: no cover - interface
        raise NotImplementedError


def _as_list(made: Any) -> list[Any]:
    return list(made) if isinstance(made, (list, tuple)) else [made]


def _from_entry(entry: str | ToolFactoryConfig, base_dir: Path, settings: ToolsConfig) -> list[Tool]:
    if isinstance(entry, str):
        factory = import_dotted(entry)
        if not callable(factory):
            raise ConfigError(f"tools.factories entry {entry!r} is not callable",
                              "name a function that returns a list of tools, or move the entry to tools.tools")
        return [as_tool(t) for t in _as_list(factory())]
    cls = import_dotted(entry.type)
    if not (isinstance(cls, type) and issubclass(cls, ToolFactory)):
        raise ConfigError(f"tools.factories entry {entry.type!r} is not a ToolFactory subclass",
                          "subclass sdk.rollout.factories.ToolFactory, or give a zero-argument function as a plain "
                          "string entry (without options)")
    return cls(entry.options, base_dir, settings).tools()


def build_tools(settings: ToolsConfig, base_dir: str | Path = ".") -> list[Tool]:
    """Every tool the section names: ``tools`` first, then each factory's, in config order.

    Args:
        settings: the ``tools:`` section.
        base_dir: the config file's folder (relative paths in factory options resolve against it).
    Raises:
        ConfigError: a path cannot be imported, an entry is neither callable nor a ToolFactory, or a
            factory's options do not validate.
        ToolError: a factory failed or returned something that is not a tool.
    """
    tools = [as_tool(import_dotted(path)) for path in settings.tools]
    for entry in settings.factories:
        tools += _from_entry(entry, Path(base_dir), settings)
    return tools
