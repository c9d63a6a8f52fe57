"""Periodic and final evaluation of the learner with the arena (duplicate deals)."""

from __future__ import annotations

import copy

from sevenrocks_env.agents import make_agent
from sevenrocks_env.policy import PolicyAgent


def evaluate_policy(model, specs, pairs: int, seed: int) -> dict:
    """``{spec: ArenaResult}`` of a frozen copy of ``model`` (team A, greedy play) vs each spec."""
    from sevenrocks_env.arena import evaluate  # the arena module; imported late (it is optional)

    agent = PolicyAgent(copy.deepcopy(model), name="policy", deterministic=True)
    return {spec: evaluate(agent, make_agent(spec), pairs, seed=seed, workers=1)
            for spec in specs}


def eval_scalars(results: dict) -> dict:
    """TensorBoard scalars ``eval/<metric>_vs_<agent>`` from arena results."""
    scalars = {}
    for spec, result in results.items():
        name = spec.replace(":", "_").replace("/", "_")
        scalars[f"eval/win_rate_vs_{name}"] = float(result.win_rate)
        scalars[f"eval/margin_vs_{name}"] = float(result.mean_margin)
        extra = result.as_dict() if hasattr(result, "as_dict") else {}
        for key in ("points_per_round", "rounds_per_match", "round_win_rate"):
            value = extra.get(key)
            if isinstance(value, (list, tuple)) and value:
                value = value[0]  # (A, B) pairs: the policy is A
            if isinstance(value, (int, float)):
                scalars[f"eval/{key}_vs_{name}"] = float(value)
    return scalars


def short_summary(results: dict) -> str:
    """``greedy 62% heuristic 48%`` for the progress bar."""
    return " ".join(f"{spec.split(':')[0][:5]} {100 * r.win_rate:.0f}%" for spec, r in results.items())
