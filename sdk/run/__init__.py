"""The run: ``tuneloop run CONFIG`` from the config to the report, through plain calls.

Follow the main corridor in this order:

* :mod:`sdk.run.cli` — the Typer commands; each validates the config, builds a
  :class:`~sdk.run.pipeline.Pipeline` and calls :meth:`~sdk.run.pipeline.Pipeline.run`.
* :mod:`sdk.run.pipeline` — orders, skips (fingerprints), times and marks the stages; owns the
  run's one sandbox and the resolved model.
* :mod:`sdk.run.spec` — :class:`~sdk.run.spec.Stage` and one :class:`~sdk.run.spec.StageSpec` per
  stage (function, config sections, upstream, enabled, needs): the whole stage contract.
* :mod:`sdk.run.context` — :class:`~sdk.run.context.StageContext`, what a stage receives.
* :mod:`sdk.run.layout` — :class:`~sdk.run.layout.RunLayout`, the only owner of run-folder paths.
* the stages: :mod:`~sdk.run.stage_tasks`, :mod:`~sdk.run.stage_sft` (SFT, DPO),
  :mod:`~sdk.run.stage_rl` (GRPO, the schedule comparison arm), :mod:`~sdk.run.stage_eval`,
  :mod:`~sdk.run.stage_report`.
* :mod:`sdk.run.finished` — reading a finished run folder into the report;
  :mod:`sdk.run.lineage` — what made each adapter; :mod:`sdk.run.bookkeeping` — stage cost and
  markers (no torch).

This package sits on top: it may import every other part of ``sdk``; nothing in ``sdk`` imports it.
"""
