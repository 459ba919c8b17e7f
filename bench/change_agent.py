"""Trial (issue 17): does a model use the change agent's tools? Agentic rollouts on mined change tasks.

    nice -n 10 .venv/bin/python bench/change_agent.py [--repo PATH] [--model smollm2-135m] [--max-commits 20]

Mines change tasks with the ``git_history`` source (default: the generated 6-commit ``calc``
repository of ``tests/connectors/history_repo.py``; ``--repo`` takes a clone obtained outside the
project, never committed), rolls each task out once with the change agent's tools
(:mod:`sdk.rollout.change_agent`, greedy, ``--max-new-tokens`` per turn, ``--max-turns``) and
scores each rollout's diff with the change reward. Prints, per task and in total: tool calls,
valid calls (parsed, known tool, arguments matching the schema, the tool did not refuse), the
tools called, files changed, score and status, and the time taken. ``--variants plain,example``
rolls the same tasks out once per system prompt (``example``: the same prompt plus one example call,
``<tool_call>{"name": "list_dir", ...}</tool_call>``) and prints tool calls per rollout for each.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # before bench/ (its connectors.py would shadow the package)

from connectors.history.source import GitHistorySource  # noqa: E402
from sdk.config import SandboxConfig  # noqa: E402
from sdk.rewards.config import RewardConfig  # noqa: E402
from sdk.rewards.tiered import score_batch  # noqa: E402
from sdk.rollout.change_agent import ChangeAgent, agent_completion  # noqa: E402
from sdk.rollout.chat_template import ensure_tool_template  # noqa: E402
from sdk.rollout.episode import hf_generator, run_episodes  # noqa: E402
from sdk.sandbox import make_sandbox  # noqa: E402

SYSTEM = ("Change the repository with the tools: read_file, search and list_dir to find the code, edit_file to "
          "change it, run_tests to run the regression tests. Stop calling tools when the change is done.")
EXAMPLE = ('\n\nCall one tool per reply, for example:\n<tool_call>{"name": "list_dir", "arguments": {"path": "."}}'
           '</tool_call>')
VARIANTS = {"plain": SYSTEM, "example": SYSTEM + EXAMPLE}   # --variants: the system prompt, without/with a one-shot call


def mine(repo: Path | None, max_commits: int, sandbox) -> list:
    """Change tasks of ``repo`` (or of the generated calc repository), prompts without context."""
    if repo is None:
        from tests.connectors.history_repo import build

        repo = Path(tempfile.mkdtemp(prefix="tl-agent-")) / "calc"
        build(repo)
    src = GitHistorySource({"path": str(repo), "max_commits": max_commits, "reruns": 0, "context": "none", "answer": "tools",
                            "heldout_fraction": 0.0}, repo.parent, "history", sandbox=sandbox)
    return list(src.read().tasks)


def main() -> None:
    """Run the trial and print the counts."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--max-commits", type=int, default=20)
    ap.add_argument("--max-new-tokens", type=int, default=192)
    ap.add_argument("--max-turns", type=int, default=6)
    ap.add_argument("--max-tasks", type=int, default=0, help="roll out at most this many tasks (0: all)")
    ap.add_argument("--variants", default="plain", help="system prompts to compare, comma-separated: " + ", ".join(VARIANTS))
    args = ap.parse_args()
    from sdk.models import load_model, resolve_model

    t0 = time.time()
    sandbox = make_sandbox(SandboxConfig(allow_unisolated=True, cache=False, concurrency=2))
    tasks = mine(args.repo, args.max_commits, sandbox)
    tasks = tasks[: args.max_tasks] if args.max_tasks else tasks
    t_mine = time.time() - t0
    model, tok = load_model(resolve_model(args.model, "~/.cache/tuneloop/models"))
    print(f"chat template: {ensure_tool_template(tok)}; {len(tasks)} tasks mined in {t_mine:.0f} s")
    for variant in args.variants.split(","):
        roll_out(variant, tasks, model, tok, sandbox, args)
    sandbox.close()


def roll_out(variant: str, tasks: list, model, tok, sandbox, args) -> None:
    """Roll every task out once with the ``variant`` system prompt; print per task and in total."""
    agent = ChangeAgent(tasks, sandbox, max_calls=args.max_turns)
    step = hf_generator(model, tok, args.max_new_tokens)
    prompts = [[{"role": "system", "content": VARIANTS[variant]}, *[m.model_dump() for m in t.prompt]] for t in tasks]
    t1 = time.time()
    episodes = run_episodes(prompts, tok, agent, step, args.max_new_tokens * args.max_turns + 2048, args.max_turns)
    t_roll = time.time() - t1
    texts = [agent_completion(ep.trace()) for ep in episodes]
    results = score_batch(tasks, texts, sandbox, RewardConfig())
    totals: collections.Counter = collections.Counter()
    for task, ep, res in zip(tasks, episodes, results):
        tr = ep.trace()
        names = collections.Counter(c["name"] for c in tr["calls"])
        totals.update(calls=tr["n_calls"], valid=tr["n_valid"], used=tr["n_calls"] > 0, changed=bool(tr["changed_files"]),
                      completed=res.status.value == "ok")
        print(f"[{variant}] {task.metadata.get('subject', task.id)[:40]:40} calls {tr['n_calls']} valid {tr['n_valid']} "
              f"tools {dict(names)} changed {tr['changed_files']} stop {tr['stop']} score {res.score} {res.status.value}")
        if not tr["calls"]:
            print(f"    first words: {(tr['final'] or tok.decode(ep.completion_ids[:60]))[:160]!r}")
    n = len(tasks)
    print(f"[{variant}] total: {n} rollouts, {totals['calls']} tool calls ({totals['valid']} valid, "
          f"{totals['calls'] / max(n, 1):.2f} per rollout), {totals['used']} rollouts used a tool, {totals['changed']} "
          f"changed a file, {totals['completed']} completed the change; rollouts {t_roll:.0f} s")


if __name__ == "__main__":
    main()
