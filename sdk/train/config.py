"""Training sections of the run configuration: LoRA, data order, difficulty, held-out watch,
schedule comparison, SFT (+ DPO) and GRPO. Re-exported by :mod:`sdk.config`, which holds the rest
and the loader; the same rules apply (unknown keys are errors, units in descriptions, cross-field
checks with the fix in the message). Imports neither torch nor any trainer: the config loads
without the training stack.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sdk.types import ConfigModel as _Cfg


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
    adaptive_eta: float = Field(2.0, gt=0, le=100, description="adaptive mixing (GRPO only, needs rl.heldout.every > 0): "
                                "w_d ∝ w_d·exp(-eta·gain_d) after each held-out evaluation")

    @model_validator(mode="after")
    def _weights(self) -> OrderConfig:
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
    def _range(self) -> DifficultyConfig:
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


class SelfDistillConfig(_Cfg):
    """Replay of the base model's own verified answers (:mod:`sdk.train.self_distill`): train tasks of
    ``domains`` give no reference rows; the base model samples ``k`` answers per task, and the ones the
    sandbox verifies become SFT rows, so tuning on house style does not overwrite what the base model
    already did right on other prompts (its general Python)."""

    enabled: bool = False
    domains: list[str] = Field(default_factory=list, description="task domains (a domain or its prefix before '/') "
                               "whose train tasks are the replay pool; their references are never trained on")
    k: int = Field(4, ge=1, description="base-model samples per pool task")
    temperature: float = Field(0.7, gt=0)
    max_new_tokens: int = Field(128, gt=0, description="tokens per sample (generation stops at the closing fence)")
    max_per_task: int = Field(2, ge=1, description="distinct verified answers kept per task")
    gen_batch_size: int = Field(8, gt=0, description="sequences per sampling batch; a seeded draw depends on its "
                                "batch, so another size samples other answers")

    @model_validator(mode="after")
    def _domains(self) -> SelfDistillConfig:
        if self.enabled and not self.domains:
            raise ValueError("sft.self_distill.enabled needs sft.self_distill.domains (the train domains whose tasks "
                             "the base model answers for replay), e.g. domains: [general]")
        return self


class SftConfig(_Cfg):
    """LoRA SFT through TRL's ``SFTTrainer``."""

    enabled: bool = True
    epochs: float = Field(2.0, gt=0)
    max_steps: int = Field(-1, description="-1: run `epochs`; otherwise stop after this many optimizer steps")
    learning_rate: float = Field(1e-3, gt=0)
    batch_size: int = Field(4, gt=0, description="per-device rows per step")
    gradient_accumulation_steps: int = Field(1, gt=0)
    max_length: int = Field(1024, gt=0, description="tokens per row (prompt + completion); longer rows follow "
                            "`truncation`. 1024 holds a prompt with the default repo_context budget (800 tokens); "
                            "at 512, 12 of toolz 1.0.0's 33 train rows were dropped, 2 at 1024")
    truncation: Literal["drop", "truncate", "error"] = Field(
        "drop", description="rows over max_length: drop (left out, listed in sft/too_long.jsonl), truncate (keep "
        "the start; the completion's end is lost; a row whose prompt alone fills max_length is dropped) or error "
        "(stop before training)")
    padding_free: bool = Field(False, description="concatenate each batch's rows into one sequence with no pad "
                               "tokens (TRL padding-free; exact: rows never attend to each other). Off by default: "
                               "without a varlen kernel (CPU) attention then spans the whole concatenation, which "
                               "measured no faster than length-grouped padded batches")
    token_budget: int | None = Field(None, gt=0, le=1_048_576, description="pack rows into sequences of at most this many tokens, "
                                     "one per device step (token-budget batches; `batch_size` is then unused); "
                                     "must be >= max_length; cannot be combined with `order`")
    include_train_references: bool = Field(True, description="train on train-split tasks' reference solutions")
    include_feedback: bool = Field(True, description="train on SFT examples from feedback sources")
    reference_docstrings: Literal["keep", "drop"] = Field(
        "keep", description="train references' function and class docstrings: keep, or drop (the prompt shows the "
        "target's docstring; a model trained to repeat it spends answer tokens on it: toolz 1.0.0, 14 of 40 held-out "
        "answers cut at 160 tokens). Expert iteration's reference replay keeps them")
    lora: LoraConfig = Field(default_factory=LoraConfig)
    init_adapter: str | None = Field(None, description="continue training this PEFT adapter folder (e.g. the "
                                     "production version, `tuneloop loop`) instead of a fresh LoRA; `lora` is then "
                                     "unused")
    save_steps: int = Field(10, gt=0, description="checkpoint every this many steps (resume point after a crash)")
    group_by_length: bool = Field(True, description="batch rows of similar length (less padding: 1.7x tokens/s "
                                  "with no gradient checkpointing vs TRL's defaults on CPU, bench/micro_sft.py); "
                                  "ignored when `order` sets a curriculum or mixing")
    order: OrderConfig = Field(default_factory=OrderConfig)
    dpo: DpoConfig = Field(default_factory=DpoConfig)
    self_distill: SelfDistillConfig = Field(default_factory=SelfDistillConfig)

    @model_validator(mode="after")
    def _budget(self) -> SftConfig:
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


class ExpertIterationConfig(_Cfg):
    """Expert iteration / rejection-sampling fine-tuning (``rl.algorithm: expert_iteration``,
    :mod:`sdk.train.expert_iteration`): per round, sample ``k`` completions per train task with the
    current adapter, keep those the sandbox verifies, SFT on them (TRL ``SFTTrainer``)."""

    rounds: int = Field(2, ge=1, description="sample-verify-train rounds")
    k: int = Field(4, ge=1, description="samples per task per round")
    max_tasks: int | None = Field(None, gt=0, description="tasks sampled per round (a seeded draw, a new one each "
                                  "round); None: every train task. CPU cost ~k x 1.5 s per task")
    max_per_task: int = Field(2, ge=1, description="distinct verified completions kept per task per round")
    gen_batch_size: int = Field(8, gt=0, description="sequences per sampling batch; a seeded draw depends on its "
                                "batch, so another size samples other completions")
    epochs: float = Field(2.0, gt=0, description="SFT epochs over a round's verified completions")
    learning_rate: float = Field(5e-4, gt=0)
    batch_size: int = Field(4, gt=0)
    replay_references: bool = Field(True, description="mix the round's sampled tasks' references into its SFT "
                                    "data, so the adapter does not drift from SFT on what it got wrong")
    replay_self_distill: bool = Field(False, description="mix the SFT stage's self-distillation rows (the base "
                                      "model's verified answers on the sft.self_distill pool) into every round's SFT "
                                      "data, so rounds on one library's rows do not undo them (OOD)")


class RlConfig(_Cfg):
    """The RL stage: GRPO through TRL's ``GRPOTrainer`` with the sandbox reward (``algorithm: grpo``),
    or expert iteration (``algorithm: expert_iteration``, settings in ``expert``)."""

    enabled: bool = True
    algorithm: Literal["grpo", "expert_iteration"] = Field("grpo", description="grpo, or expert_iteration "
                                                           "(sample k, keep the verified, SFT on them; rl.expert)")
    expert: ExpertIterationConfig = Field(default_factory=ExpertIterationConfig)
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
    eval_midway: bool = Field(True, description="save the adapter at max_steps/2 (expert iteration: after half the "
                              "rounds) to rl/midway/adapter; the eval stage evaluates it as a benefit-curve point")
    drop_zero_std_groups: bool = Field(True, description="leave groups whose rewards are all equal out of the loss "
                                       "(DAPO dynamic sampling, no refill; sdk.train.zero_std); false: TRL as is")
    order: OrderConfig = Field(default_factory=OrderConfig)
    difficulty: DifficultyConfig = Field(default_factory=DifficultyConfig)
    heldout: HeldoutWatchConfig = Field(default_factory=HeldoutWatchConfig)
    compare: CompareConfig = Field(default_factory=CompareConfig)

    @model_validator(mode="after")
    def _group(self) -> RlConfig:
        if self.batch_size % self.num_generations:
            raise ValueError(f"rl.batch_size ({self.batch_size}) must be a multiple of rl.num_generations "
                             f"({self.num_generations}); e.g. set batch_size: {self.num_generations}")
        return self

    @model_validator(mode="after")
    def _adaptive(self) -> RlConfig:
        if self.enabled and self.order.mixing == "adaptive" and not (self.heldout.every or self.compare.enabled):
            raise ValueError("rl.order.mixing is `adaptive` but nothing probes held-out progress during GRPO; "
                             "set rl.heldout.every (e.g. 4), or use mixing: temperature")
        return self

    @model_validator(mode="after")
    def _probe(self) -> RlConfig:
        every = self.compare.every
        if self.compare.enabled and every and self.heldout.every and every != self.heldout.every:
            raise ValueError(f"rl.compare.every ({every}) differs from rl.heldout.every ({self.heldout.every}); "
                             "both arms must be probed at the same steps: drop rl.compare.every or set them equal")
        return self
