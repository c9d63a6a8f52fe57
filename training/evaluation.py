"""Periodic and final evaluation of the learner with the arena (duplicate deals)."""

from __future__ import annotations

import copy
import re

from sevenrocks_env.agents import make_agent
from sevenrocks_env.policy import PolicyAgent

from .agent_files import check_session_files


def evaluate_policy(model, specs, pairs: int, seed: int, target: int, max_rounds: int) -> dict:
    """``{spec: ArenaResult}`` of a frozen copy of ``model`` (team A, greedy play) vs each spec,
    in matches to ``target`` cut after ``max_rounds`` rounds: the run's own settings.  Each spec
    goes to the arena as a spec, so its two seats are two agents seeded as the arena seeds
    them, and the numbers are ``sevenrocks arena``'s with that seed and those pairs (an agent
    object would play both seats with one generator: other draws for ``random``, ``sample:``
    or ``search``).  ``specs``: the config's ``eval_agents``, which ``TrainConfig`` checked (no
    ``sb3:`` pickle)."""
    from sevenrocks_env.arena import evaluate

    agent = PolicyAgent(copy.deepcopy(model), name="policy", deterministic=True)
    return {spec: evaluate(agent, spec, pairs, seed=seed, workers=1, target=target,
                           max_rounds=max_rounds)
            for spec in specs}


def eval_game_picture(model, spec: str, seed: int, target: int, max_rounds: int):
    """Board picture (H x W x 3 uint8) of the end of one evaluation match: the policy at seats
    0 and 2 against ``spec``, every hand face up (for ``SummaryWriter.add_image``)."""
    from sevenrocks_env.arena import run_match
    from sevenrocks_env.render.picture import render_picture

    agent = PolicyAgent(copy.deepcopy(model), name="policy", deterministic=True)
    opponent = make_agent(spec, seed=seed, allow_pickles=False)
    match, _ = run_match([agent, opponent, agent, opponent], seed=seed, target=target,
                         max_rounds=max_rounds)
    return render_picture(match, spectator=True)


def tag_name(spec: str) -> str:
    """An agent spec as part of a TensorBoard tag: every character but letters, digits, ``_``,
    ``.`` and ``-`` becomes ``_`` (``ckpt:a/b.pt`` -> ``ckpt_a_b.pt``,
    ``sample:policy=a.pt,temperature=0.5`` -> ``sample_policy_a.pt_temperature_0.5``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", spec.strip())


def eval_scalars(results: dict) -> dict:
    """TensorBoard scalars ``eval/<metric>_vs_<agent>`` from arena results."""
    scalars = {}
    for spec, result in results.items():
        name = tag_name(spec)
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


def short_names(specs) -> list[str]:
    """Short distinct names of agent specs for the progress bar: the kind's first five letters
    (``heuri``), and where two specs share them, the end of each one's argument too
    (``ckpt:a.pt``, ``ckpt:b.pt``; ``searc:samples=16``), numbered if still alike."""
    specs = list(specs)
    kinds = [spec.split(":")[0][:5] for spec in specs]
    names = []
    for spec, kind in zip(specs, kinds):
        if kinds.count(kind) > 1 and ":" in spec:
            kind = f"{kind}:{spec.split(':', 1)[1].rsplit('/', 1)[-1][-12:]}"
        names.append(kind)
    return [f"{name}#{names[:i].count(name) + 1}" if names.count(name) > 1 else name
            for i, name in enumerate(names)]


def short_summary(results: dict) -> str:
    """``greed 62% heuri 48%`` for the progress bar, one :func:`short_names` name each."""
    return " ".join(f"{name} {100 * result.win_rate:.0f}%"
                    for name, result in zip(short_names(results), results.values()))


def evaluate_and_log(writer, model, cfg, pairs: int, global_step: int, wall_seconds: float,
                     eval_files: dict) -> dict:
    """Arena evaluation against ``cfg.eval_agents``: the eval/ scalars, the wall time, and one
    evaluation match against the last eval agent as a board picture (eval/game).  The agents'
    files must be those of the session's start (``eval_files``, what its checkpoints keep).
    Everything is computed before anything is logged: a Ctrl-C during the picture's match left
    the scalars logged, and the resumed run logged its final evaluation at that step again."""
    check_session_files(eval_files, cfg.eval_agents, "eval_agents")
    results = evaluate_policy(model, cfg.eval_agents, pairs, cfg.eval_seed, cfg.target,
                              cfg.max_rounds)
    picture = eval_game_picture(model, cfg.eval_agents[-1], cfg.eval_seed, cfg.target,
                                cfg.max_rounds)
    for key, value in eval_scalars(results).items():
        writer.add_scalar(key, value, global_step)
    writer.add_scalar("eval/wall_minutes", wall_seconds / 60, global_step)
    writer.add_scalar("eval/pairs", pairs, global_step)  # for the curve's confidence bands
    writer.add_image("eval/game", picture, global_step, dataformats="HWC")
    return results
