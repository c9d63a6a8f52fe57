"""Baseline agents and agent specs.

Every player follows :class:`~sevenrocks_env.agents.base.Agent`: ``act(observation, action_mask)
-> action`` and ``seed(seed)``.  :func:`make_agent` builds one from a spec string usable on the
command line:

| spec                                   | agent                                               |
|----------------------------------------|-----------------------------------------------------|
| ``random``                             | uniform over legal actions                          |
| ``greedy``                             | most points now, then heaviest tile                 |
| ``heuristic``                          | one-ply lookahead with defence (see its docstring)  |
| ``search[:samples=64,time_limit=S,rollout=defensive,win_bonus=50]`` | determinized Monte-Carlo (no time limit by default: deterministic for a seed) |
| ``search:policy=shipped[,samples=64,prior=5,win_bonus=50,reach=60,horizon=3,rollout=argmax,threads=1]`` | policy-guided determinized search (``policy=PATH``: a checkpoint) |
| ``search:policy=shipped,inference=0.5[,candidates=N,...]`` | the same search, its worlds weighted by the other seats' plays this round (``agents.inference``; reads the round's plays: ``needs_history``) |
| ``ckpt:PATH`` / ``policy:PATH``        | a trained checkpoint (``sevenrocks_env.policy``)    |
| ``ckpt:shipped``                       | the policy installed with the package               |
| ``sample:policy=shipped[,temperature=1]`` | a trained checkpoint (``policy=PATH``) that samples its move from its distribution (the logits divided by ``temperature``) instead of playing the most probable one |
| ``sb3:PATH``                           | an sb3-contrib MaskablePPO zip (``sb3_agent``); **trusted files only**: an SB3 zip is a pickle and loading it can run code |
| ``openspiel:ismcts[:sims=100,uct_c=40,rollouts=1]`` / ``openspiel:mcts[...]`` | OpenSpiel's IS-MCTS / MCTS on the current round (``docs/openspiel.md``; extra ``[openspiel]``) |
"""

from __future__ import annotations

import os

from ..checks import checked_bool, checked_seed
from .base import Agent, parse_spec_params
from .greedy import GreedyAgent
from .heuristic import HeuristicAgent
from .random_agent import RandomAgent
from .search import ROLLOUTS, SearchAgent
from .spec_text import NAMED_SPEC, canonical_spec, same_spec

#: spec name -> (class, {parameter: type})
AGENTS = {
    "random": (RandomAgent, {}),
    "greedy": (GreedyAgent, {}),
    "heuristic": (HeuristicAgent, {}),
    "search": (SearchAgent, {"samples": int, "time_limit": float, "rollout": str,
                             "win_bonus": float}),
}
CHECKPOINT_SPECS = ("ckpt", "policy")
#: ``search:policy=...``: the policy-guided search (imported lazily: it needs torch).
POLICY_SEARCH_PARAMS = {"policy": str, "samples": int, "prior": float, "win_bonus": float,
                        "reach": int, "horizon": int, "rollout": str, "threads": int,
                        "inference": float, "candidates": int}
#: ``sample:policy=...``: a checkpoint that samples its moves (``PolicyAgent(deterministic=False)``).
SAMPLE_SPEC = "sample"
SAMPLE_PARAMS = {"policy": str, "temperature": float}
SB3_SPEC = "sb3"
OPENSPIEL_SPEC = "openspiel"


def valid_specs(separator: str = ", ") -> str:
    """Every spec form, for error messages (``", "``-separated) and ``--help`` (one a line)."""
    lines = []
    for name, (_, params) in AGENTS.items():
        extra = ",".join(f"{p}=<{t.__name__}>" for p, t in params.items())
        lines.append(f"{name}[:{extra}]" if extra else name)
    lines.append("search:policy=<shipped|PATH>[," + ",".join(
        f"{p}=<{t.__name__}>" for p, t in POLICY_SEARCH_PARAMS.items() if p != "policy") + "]")
    lines += [f"{prefix}:PATH" for prefix in CHECKPOINT_SPECS] + [
        "ckpt:shipped", f"{SAMPLE_SPEC}:policy=<shipped|PATH>[,temperature=<float>]",
        f"{SB3_SPEC}:PATH (trusted files only)"]
    lines.append(f"{OPENSPIEL_SPEC}:ismcts|mcts[:sims=<int>,uct_c=<float>,rollouts=<int>]")
    return separator.join(lines)


def make_agent(spec, seed: int | None = None, allow_pickles: bool = True) -> Agent:
    """Build an agent from ``spec`` (see the module table); an Agent instance passes through.

    Raises ``ValueError`` naming the valid specs and parameters for anything else.
    ``allow_pickles=False`` refuses ``sb3:PATH`` (a pickle, which can run code): for specs read
    from files, such as a training config or checkpoint.  ``seed``: a non-negative int, or
    ``None`` for a fresh draw (``TypeError``/``ValueError`` naming ``seed`` otherwise).
    ``allow_pickles``: a bool (``TypeError`` otherwise: the string ``"False"`` allowed them).
    """
    seed = checked_seed(seed)
    allow_pickles = checked_bool("allow_pickles", allow_pickles)
    if not isinstance(spec, str):
        if isinstance(spec, Agent):
            if seed is not None:
                spec.seed(seed)
            return spec
        missing = [name for name in ("act", "seed") if not callable(getattr(spec, name, None))]
        hint = missing and type(spec).__module__ != "builtins"  # (an int lacks them, of course)
        raise ValueError(f"agent spec must be a string or an Agent, got {type(spec).__name__}"
                         + (f" (an Agent has methods act(observation, action_mask) and seed(seed);"
                            f" it lacks {' and '.join(missing)})" if hint else ""))
    name, _, rest = spec.strip().partition(":")
    if name in CHECKPOINT_SPECS:
        return _load_checkpoint(rest.strip(), seed)
    if name == SAMPLE_SPEC:
        params = parse_spec_params(rest, SAMPLE_PARAMS, f"agent {SAMPLE_SPEC!r}")
        if not params.get("policy"):
            raise ValueError(f"{SAMPLE_SPEC} needs a checkpoint: {SAMPLE_SPEC}:policy=shipped or "
                             f"{SAMPLE_SPEC}:policy=PATH")
        return _load_checkpoint(params["policy"], seed, deterministic=False,
                                temperature=params.get("temperature", 1.0))
    if name == SB3_SPEC:
        if not allow_pickles:
            raise ValueError(f"{SB3_SPEC}:PATH loads a pickle, which can run code; it is not "
                             "read from a config or checkpoint (play it in `sevenrocks arena`)")
        try:
            from .sb3_agent import load_sb3_agent  # imports sb3-contrib only when asked for
        except ImportError as error:  # torch (and sb3-contrib) are extras
            raise ValueError(f"{SB3_SPEC}: agents need sb3-contrib and torch: "
                             f"pip install -e \".[sb3]\" ({error})") from None

        return load_sb3_agent(rest.strip(), seed)
    if name == OPENSPIEL_SPEC:
        return _load_openspiel(rest, seed)
    if name not in AGENTS:
        named = NAMED_SPEC.match(spec)
        if named:  # a display name outside the arena
            raise ValueError(f"unknown agent spec {spec!r}: NAME=SPEC names an agent in `sevenrocks "
                             f"arena` and the ladder only; here give the spec alone "
                             f"({named.group(2).strip()[:80]!r})")
        raise ValueError(f"unknown agent spec {spec!r}; valid specs: {valid_specs()}")
    cls, types = AGENTS[name]
    if _is_policy_search(name, rest):
        types = POLICY_SEARCH_PARAMS
    params = parse_spec_params(rest, types, f"agent {name!r}", f"; valid specs: {valid_specs()}")
    if types is POLICY_SEARCH_PARAMS:
        return _policy_search(params, seed)
    return cls(seed=seed, **params)


def spec_files(spec: str) -> list:
    """The files an agent spec loads (a checkpoint, a policy search's policy, an SB3 zip), as
    resolved paths; ``[]`` for rule-based agents.  The arena's pair log fingerprints them so that
    a run is not continued with different weights under the same spec."""
    from pathlib import Path

    name, _, rest = spec.strip().partition(":")
    if name in CHECKPOINT_SPECS or name == SAMPLE_SPEC or _is_policy_search(name, rest):
        if name == "search":
            rest = parse_spec_params(rest, POLICY_SEARCH_PARAMS, "agent 'search'")["policy"]
        elif name == SAMPLE_SPEC:
            rest = parse_spec_params(rest, SAMPLE_PARAMS, f"agent {SAMPLE_SPEC!r}").get(
                "policy", "")
        if not rest.strip():
            raise ValueError(f"{spec.strip()[:40]!r} names no checkpoint: ckpt:PATH, "
                             f"{SAMPLE_SPEC}:policy=PATH, search:policy=PATH")
        from ..policy import CheckpointError, resolve_path
        try:
            return [resolve_path(rest.strip())]
        except CheckpointError as error:
            raise ValueError(f"cannot read checkpoint: {error}") from None
    if name == SB3_SPEC:
        return [Path(rest.strip()).expanduser()]
    return []


def _is_policy_search(name: str, rest: str) -> bool:
    """``search:...`` with a ``policy=`` parameter: the policy-guided search."""
    return name == "search" and any(part.partition("=")[0].strip() == "policy"
                                    for part in rest.split(","))


def _policy_search(params: dict, seed: int | None) -> Agent:
    """``search:policy=shipped|PATH,...``: :class:`~.policy_search.PolicySearchAgent`, or with
    ``inference=POWER`` the :class:`~.inference.InferenceSearch` over it."""
    try:
        from .policy_search import PolicySearchAgent
    except ImportError as error:
        raise ValueError(f"search:policy needs PyTorch: pip install -e \".[train]\" "
                         f"({error})") from None
    if not params["policy"]:
        raise ValueError("search:policy needs a checkpoint: policy=shipped or policy=PATH")
    power, candidates = params.pop("inference", None), params.pop("candidates", None)
    if power is None:
        if candidates is not None:
            raise ValueError("search:policy: candidates=N goes with inference=POWER")
        return PolicySearchAgent(seed=seed, **params)
    from .inference import InferenceSearch
    return InferenceSearch(PolicySearchAgent(seed=seed, **params), power, candidates)


def _load_openspiel(rest: str, seed: int | None) -> Agent:
    try:
        from ..openspiel.bots import make_openspiel_agent
    except ImportError as error:  # (the package's own message names the extra to install)
        raise ValueError(f"openspiel agents: {error}") from None
    return make_openspiel_agent(rest, seed)


def _load_checkpoint(path: str, seed: int | None, deterministic: bool = True,
                     temperature: float = 1.0) -> Agent:
    """``ckpt:PATH`` (or sampling: ``sample:policy=PATH``); ``shipped`` is the policy installed
    with the package."""
    if not path:
        raise ValueError("checkpoint spec needs a path: ckpt:PATH (or ckpt:shipped)")
    try:
        from ..policy import CheckpointError, checked_temperature, load_policy, resolve_path
    except ImportError as error:
        raise ValueError(f"checkpoint agents need PyTorch: pip install -e \".[train]\" "
                         f"({error})") from None
    temperature = checked_temperature(temperature)   # before the file is opened
    try:
        resolved = resolve_path(path)
    except CheckpointError as error:
        _, comma, after = path.partition(",")
        hint = ("; ckpt: takes a path and no parameters (sampling at a temperature: "
                f"{SAMPLE_SPEC}:policy=PATH,temperature=T)" if comma and "=" in after
                and deterministic else "")
        raise ValueError(f"cannot read checkpoint: {error}{hint}") from None
    if not os.access(resolved, os.R_OK):
        raise ValueError(f"cannot read checkpoint {path!r}")
    try:
        agent = load_policy(path, device="cpu", deterministic=deterministic,
                            temperature=temperature)
    except CheckpointError as error:  # (its message names the file: not said twice)
        from .sb3_agent import zip_holds
        hint = ("; it is a Stable-Baselines3 model: load it with sb3:PATH"
                if zip_holds(resolved, "policy.pth") else "")
        raise ValueError(f"cannot load checkpoint: {error}{hint}") from error
    except Exception as error:  # any failure to load is bad input from the user's side
        raise ValueError(f"cannot load checkpoint {path!r}: {error}") from error
    if seed is not None:
        agent.seed(seed)
    return agent


__all__ = ["AGENTS", "Agent", "GreedyAgent", "HeuristicAgent", "RandomAgent", "ROLLOUTS",
           "SAMPLE_SPEC", "SearchAgent", "canonical_spec", "make_agent", "same_spec", "spec_files",
           "valid_specs"]
