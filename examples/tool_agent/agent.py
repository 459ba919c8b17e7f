"""Train a model to use an inventory API and a document search, and report before/after.

    .venv/bin/python -m examples.tool_agent.agent examples/tool_agent/agent.yaml            # SmolLM2-135M
    .venv/bin/python -m examples.tool_agent.agent examples/tool_agent/agent.yaml --set model=/path/tiny

Steps: build the SQLite inventory and handbook (FTS5) in ``run_dir``; build answer-verified
tasks and split them (train / held-out); evaluate the base model with multi-turn tool rollouts
(greedy); run GRPO through TRL with :class:`sdk.rollout.trl_rollout.ToolRolloutFunc` and
:class:`sdk.rollout.rewards.ToolTaskReward`; evaluate again; write ``report.json`` and
``report.md`` with the valid-tool-call rate and task success before and after, and
``rl/traces.jsonl`` with every training rollout's calls and retrieved documents.

This is a script rather than a ``tuneloop run`` config because the pipeline's RL stage does not
yet take a ``rollout_func`` (see the issue 8 report); the config is validated the same way.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from sdk.config import LoraConfig, RlConfig
from sdk.rollout.config import ToolsConfig


class AgentConfig(BaseModel):
    """The example's config (``agent.yaml``); paths are relative to the config file."""

    model_config = ConfigDict(extra="forbid")

    run_dir: str = "runs/tool_agent"
    model: str = Field("smollm2-135m", description="smollm2-135m or a local model folder")
    seed: int = 0
    heldout_fraction: float = Field(0.4, gt=0, lt=1)
    eval_limit: int | None = Field(None, gt=0, description="held-out tasks evaluated (all when unset)")
    eval_max_new_tokens: int = Field(96, gt=0, description="tokens per assistant turn in evaluation")
    rl: RlConfig = Field(default_factory=RlConfig)
    lora: LoraConfig = Field(default_factory=LoraConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)


def load(path: str | Path, overrides: dict[str, Any] | None = None) -> tuple[AgentConfig, Path]:
    """The validated config and its folder (``overrides``: dotted keys, as ``tuneloop --set``)."""
    from sdk.config import _set_dotted

    raw = yaml.safe_load(Path(path).read_text()) or {}
    for key, value in (overrides or {}).items():
        _set_dotted(raw, key, value)
    return AgentConfig.model_validate(raw), Path(path).resolve().parent


def toolbox_factory(db_url: str, cfg: ToolsConfig):
    """A zero-argument factory of fresh tool boxes: the inventory tools and the handbook search."""
    from connectors.retrievers import SqlFtsRetriever
    from examples.tool_agent.inventory import inventory_tools
    from sdk.rollout.retrieval import retriever_tool
    from sdk.rollout.tools import ToolBox, as_tool

    tools = [as_tool(t) for t in inventory_tools(db_url)]
    tools.append(retriever_tool(SqlFtsRetriever(url=db_url, table="docs_fts", k=cfg.retrieval_k), k=cfg.retrieval_k,
                                description="Search the store handbook (returns, shipping, warranty, discounts)."))
    return lambda: ToolBox(tools, max_calls=cfg.max_calls, max_result_chars=cfg.max_result_chars)


def evaluate(model, tokenizer, tasks, make_box, cfg: AgentConfig) -> tuple[dict[str, float], list[dict]]:
    """Greedy tool rollouts on ``tasks``: metrics and one row per task (trace, components, score)."""
    from sdk.rollout.episode import hf_generator, run_episodes
    from sdk.rollout.rewards import ToolTaskReward

    model.eval()
    gen = hf_generator(model, tokenizer, cfg.eval_max_new_tokens, temperature=0.0, batch_size=8, seed=cfg.seed)
    budget = cfg.eval_max_new_tokens * (cfg.tools.max_calls + 1) + 256
    episodes = run_episodes([[m.model_dump() for m in t.prompt] for t in tasks], tokenizer, make_box, gen, budget,
                            cfg.tools.max_turns)
    reward = ToolTaskReward(cfg.tools.reward)
    rows = []
    for task, ep in zip(tasks, episodes):
        trace = ep.trace()
        score, comps = reward.score(task, trace)
        rows.append({"task": task.id, "question": task.prompt[-1].content, "expected": task.verifier.expected,
                     "score": score, "components": comps, **trace})
    return summarize(rows), rows


def summarize(rows: list[dict]) -> dict[str, float]:
    """valid_tool_call_rate (valid / all calls), tool_use_rate (rollouts with a call), task_success
    (answer matched), right_tool (mean), mean_reward, calls_per_task."""
    n = max(len(rows), 1)
    calls = sum(r["n_calls"] for r in rows)
    return {"tasks": len(rows),
            "valid_tool_call_rate": sum(r["n_valid"] for r in rows) / calls if calls else 0.0,
            "tool_use_rate": sum(r["n_calls"] > 0 for r in rows) / n,
            "task_success": sum(r["components"].get("answer", 0.0) == 1.0 for r in rows) / n,
            "right_tool": sum(r["components"].get("right_tool", 0.0) for r in rows) / n,
            "mean_reward": sum(r["score"] or 0.0 for r in rows) / n,
            "calls_per_task": calls / n}


def train(model_path: str, train_tasks, make_box, cfg: AgentConfig, out: Path):
    """GRPO with tool rollouts; returns the trained (PEFT) model, its tokenizer and the log history."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sdk.models import load_model
    from sdk.rollout.chat_template import ensure_tool_template
    from sdk.rollout.rewards import ToolTaskReward
    from sdk.rollout.trl_rollout import ToolRolloutFunc
    from sdk.train.common import peft_config, quiet_trainer
    from sdk.train.grpo import grpo_args, grpo_rows

    model, tok = load_model(model_path)
    ensure_tool_template(tok)
    args = GRPOConfig(**grpo_args(cfg.rl, out, cfg.seed))
    trainer = GRPOTrainer(model=model, reward_funcs=ToolTaskReward(cfg.tools.reward), args=args,
                          train_dataset=Dataset.from_list(grpo_rows(train_tasks)), processing_class=tok,
                          peft_config=peft_config(cfg.lora),
                          rollout_func=ToolRolloutFunc(make_box, cfg.tools.max_turns, out / "traces.jsonl"))
    quiet_trainer(trainer)
    trainer.train()
    trainer.save_model(str(out / "adapter"))
    return trainer.model, tok, trainer.state.log_history


def run(config: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole example; returns the report (also written to ``run_dir/report.json`` and ``report.md``)."""
    from examples.tool_agent.inventory import build_db
    from examples.tool_agent.tasks import build_tasks
    from sdk.models import load_model, resolve_model
    from sdk.rollout.chat_template import ensure_tool_template
    from sdk.tasks.records import Split
    from sdk.tasks.split import assign_splits

    cfg, base = load(config, overrides)
    run_dir = (base / cfg.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    db_url = build_db(run_dir / "inventory.db")
    make_box = toolbox_factory(db_url, cfg.tools)
    tasks, _ = assign_splits(build_tasks(), cfg.heldout_fraction, [], cfg.seed, {})
    train_tasks = [t for t in tasks if t.split == Split.TRAIN]
    heldout = sorted((t for t in tasks if t.split == Split.HELDOUT), key=lambda t: t.id)[: cfg.eval_limit]
    model_path = resolve_model(cfg.model, "~/.cache/tuneloop/models") if not Path(base / cfg.model).is_dir() \
        else str(base / cfg.model)
    model, tok = load_model(model_path)
    ensure_tool_template(tok)
    before, rows_before = evaluate(model, tok, heldout, make_box, cfg)
    del model
    tuned, tok, history = train(model_path, train_tasks, make_box, cfg, run_dir / "rl")
    after, rows_after = evaluate(tuned, tok, heldout, make_box, cfg)
    report = {"model": cfg.model, "train_tasks": len(train_tasks), "heldout_tasks": len(heldout),
              "rl_steps": cfg.rl.max_steps, "before": before, "after": after,
              "train_tool_metrics": [{k: v for k, v in h.items() if k.startswith(("tools/", "reward"))}
                                     for h in history if "loss" in h]}
    for label, rows in (("base", rows_before), ("tuned", rows_after)):
        (run_dir / f"eval_{label}.jsonl").write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    (run_dir / "report.json").write_text(json.dumps(report, indent=2))
    (run_dir / "report.md").write_text(render_markdown(report))
    return report


def render_markdown(report: dict[str, Any]) -> str:
    """A before/after table of the tool metrics."""
    keys = ["valid_tool_call_rate", "tool_use_rate", "task_success", "right_tool", "mean_reward", "calls_per_task"]
    lines = [f"# Tool agent: {report['model']}", "",
             (f"{report['train_tasks']} train tasks, {report['heldout_tasks']} held-out tasks, "
              f"{report['rl_steps']} GRPO steps."), "", "| metric | base | tuned |", "|---|---|---|"]
    lines += [f"| {k} | {report['before'][k]:.3f} | {report['after'][k]:.3f} |" for k in keys]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--set", action="append", default=[], help="dotted.key=value (YAML value)")
    ns = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, _, v in (s.partition("=") for s in ns.set)}
    report = run(ns.config, overrides)
    print(render_markdown(report))


if __name__ == "__main__":
    main()
