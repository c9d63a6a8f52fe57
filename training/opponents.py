"""The opponent pool for matches that are not pure self-play (``opponents:`` in the config).

Entries are agent specs for :func:`sevenrocks_env.agents.make_agent` (fixed baselines or
``ckpt:path``) and ``past``: a frozen snapshot of this run's own policy from some updates ago,
sampling its actions, so the learner keeps beating its earlier selves instead of overfitting to
its current one.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import torch

from sevenrocks_env.agents import make_agent
from sevenrocks_env.fingerprints import files_fingerprint
from sevenrocks_env.checks import shown
from sevenrocks_env.driver import blamed_on
from sevenrocks_env.policy import PolicyAgent, PolicyNet
from sevenrocks_env.public_round import reads_history

PAST = "past"


def is_past_key(key: str) -> bool:
    """Whether an opponent key (:meth:`OpponentPool.key`) names a snapshot of the learner
    (``past#k`` in the pool, ``past@k`` dropped from it), not a spec: a ``ckpt:`` path may
    hold ``#`` or ``@`` too."""
    return key == PAST or key.startswith((f"{PAST}#", f"{PAST}@"))


def policy_actions(agent: PolicyAgent, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``PolicyAgent.act`` for a batch of seats in one forward pass: ``[N]`` actions (CPU int64)
    from observations ``[N, 238]`` and legal-action masks ``[N, 113]`` (bool, each row with a
    real choice).  Deterministic agents play the most probable legal action, as ``act`` does;
    sampling agents draw from the masked distribution with their own seeded generator.  Any
    policy-network opponent goes through here: a ``past`` snapshot, a ``ckpt:`` or a ``sample:``
    spec (at its temperature)."""
    device = agent.device
    mask = mask.to(device)
    logits, _ = agent.model(obs.to(device), mask)
    dist = agent.distribution(logits, mask)
    if agent.deterministic:
        return dist.mode().cpu()
    return dist.sample(agent._generator).cpu()


def batch_actions(agent, state, obs: torch.Tensor, mask: torch.Tensor,
                  index: torch.Tensor) -> torch.Tensor:
    """``agent.act`` for the matches ``index`` of a batched engine (``state``: its
    :class:`~sevenrocks_env.batched.BatchState`; ``obs``/``mask``: every match's seat on turn,
    each of ``index`` with a real choice): a policy network in one forward pass
    (:func:`policy_actions`), ``greedy`` and ``heuristic`` by their batched twins (the same
    choices), any other agent through ``act`` match by match.  An agent that fails (a
    checkpoint's non-finite outputs) is an :class:`~sevenrocks_env.driver.AgentError` naming it."""
    with blamed_on(agent, " (a training opponent)"):
        return _batch_actions(agent, state, obs, mask, index)


def _batch_actions(agent, state, obs, mask, index):
    from sevenrocks_env.agents.greedy import GreedyAgent
    from sevenrocks_env.agents.heuristic import HeuristicAgent
    from sevenrocks_env.batched.greedy import greedy_actions
    from sevenrocks_env.batched.heuristic import heuristic_actions
    from sevenrocks_env.batched_agents import plays_as  # (a subclass with its own moves: act)
    if plays_as(agent, PolicyAgent):
        return policy_actions(agent, obs[index], mask[index])
    if plays_as(agent, GreedyAgent):
        return greedy_actions(state, mask, index)
    if plays_as(agent, HeuristicAgent):
        return heuristic_actions(state, mask, index, agent.weights)
    observations, masks = obs[index].cpu().numpy(), mask[index].cpu().numpy().astype(np.int8)
    return torch.tensor([int(agent.act(o, m)) for o, m in zip(observations, masks)])


def generators(agent) -> dict:
    """An opponent's random generators: ``{"torch": ...}`` (policy agents' ``_generator``) and
    ``{"numpy": ...}`` (random and search agents' ``_rng``), whichever it has."""
    found = {}
    if isinstance(getattr(agent, "_generator", None), torch.Generator):
        found["torch"] = agent._generator
    if isinstance(getattr(agent, "_rng", None), np.random.Generator):
        found["numpy"] = agent._rng
    return found


def generator_state(generator):
    return (generator.get_state() if isinstance(generator, torch.Generator)
            else generator.bit_generator.state)


def set_generator_state(generator, state) -> None:
    if isinstance(generator, torch.Generator):
        generator.set_state(state)
    else:
        generator.bit_generator.state = state


def save_generators(agents) -> list:
    """The random generator states of these opponents, for :func:`restore_generators`."""
    saved, seen = [], set()
    for agent in agents:
        if agent is None or id(agent) in seen:
            continue
        seen.add(id(agent))
        saved += [(g, generator_state(g)) for g in generators(agent).values()]
    return saved


def restore_generators(saved: list) -> None:
    """Put back the generator states :func:`save_generators` took."""
    for generator, state in saved:
        set_generator_state(generator, state)


def cpu_weights(model) -> dict:
    """A copy of ``model``'s weights as CPU tensors (what checkpoints and snapshots keep)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def training_opponent(spec: str):
    """The agent ``spec`` names, if it may be a training opponent (a config's ``opponents``,
    or a match in progress in a checkpoint); ``ValueError`` saying why not.  Never a pickle
    (``sb3:``: configs and checkpoints are shared); not an OpenSpiel bot (its numpy
    ``RandomState`` is not saved, so ``--resume`` would not be bit for bit, and it takes ~0.1 s
    a decision); not ``search`` with a ``time_limit`` (how many worlds it samples depends on the
    machine's speed); not one that reads the round's plays (``needs_history``)."""
    if spec.strip().startswith("openspiel:"):
        raise ValueError(f"{shown(spec)}: OpenSpiel bots cannot be training opponents (use them "
                         "in the arena)")
    agent = make_agent(spec, allow_pickles=False)
    if reads_history(agent):
        raise ValueError(f"{shown(spec)}: an agent that reads the round's plays (inference=) "
                         "cannot be a training opponent (the trainer's engine keeps no history; "
                         "use it in the arena)")
    if getattr(agent, "time_limit", None) is not None:
        raise ValueError(f"{shown(spec)}: a training opponent cannot have a time_limit (give "
                         "samples=N instead)")
    return agent


class OpponentPool:
    """``pool(rng) -> (name, agent)``: a uniformly drawn entry (``past``: a uniformly drawn
    snapshot); :meth:`restore` gives back an entry by the key a checkpoint saved.  The snapshots
    play on ``model``'s device and are kept (and saved) as CPU tensors."""

    def __init__(self, specs, model: PolicyNet, max_snapshots: int = 5):
        self.specs = list(specs)
        self.max_snapshots = max_snapshots
        self.snapshots: list[dict] = []   # state_dicts, oldest first
        self._past_agents: list[PolicyAgent] = []
        # snapshots dropped from the pool while a match still plays them: registered by key()
        # for the next state_dict() (and only those: a match that ended lets its snapshot go)
        self._retired: list[PolicyAgent] = []
        self._restored: list[PolicyAgent] = []  # a checkpoint's retired ones, for "past@k"
        self._fixed_states: dict = {}  # generator states for baselines restore() builds later
        self.files: dict[str, str] = {}  # {spec: sha256 of the files it loaded} (agent_files)
        self._template = copy.deepcopy(model)
        self._device = next(model.parameters()).device
        self._fixed = {spec: self._baseline(spec) for spec in self.specs if spec != PAST}
        if PAST in self.specs:
            self.add_snapshot(model)

    def ensure_snapshot(self, model: PolicyNet) -> None:
        """With ``past`` in the pool and no snapshot yet (``past`` added on ``--resume``), take
        one of ``model``: the resumed policy, not the fresh network the pool was built with."""
        if PAST in self.specs and not self._past_agents:
            self.add_snapshot(model)

    def add_snapshot(self, model: PolicyNet) -> None:
        state = cpu_weights(model)
        self.snapshots.append(state)
        net = copy.deepcopy(self._template)
        net.load_state_dict(state)
        self._past_agents.append(PolicyAgent(net, name=PAST, deterministic=False,
                                             device=self._device))
        del self.snapshots[:-self.max_snapshots]
        del self._past_agents[:-self.max_snapshots]

    def __call__(self, rng) -> tuple[str, object]:
        name = self.specs[int(rng.integers(len(self.specs)))]
        if name == PAST:
            return name, self._past_agents[int(rng.integers(len(self._past_agents)))]
        return name, self._fixed[name]

    # -- resume ---------------------------------------------------------------------------------

    def key(self, name: str, agent) -> str:
        """A plain string that :meth:`restore` turns back into the same opponent.  A snapshot
        already dropped from the pool is registered, and saved by the next :meth:`state_dict`
        (call it after the engine's, whose keys these are)."""
        if name != PAST:
            return name
        for prefix, agents in (("#", self._past_agents), ("@", self._retired)):
            for index, known in enumerate(agents):
                if known is agent:
                    return f"{PAST}{prefix}{index}"
        self._retired.append(agent)
        return f"{PAST}@{len(self._retired) - 1}"

    def restore(self, key: str) -> tuple[str, object]:
        """The opponent of a match in progress at save time.  A baseline that is no longer in the
        pool (``--set opponents=...`` on resume) still finishes the matches it had started.
        Raises ``ValueError`` naming the key if it names no opponent (keys come from files)."""
        if not isinstance(key, str) or len(key) > 4096:
            raise ValueError(f"opponent key must be a string, got {shown(key)}")
        if key.startswith(f"{PAST}@"):  # a dropped snapshot, saved with the pool
            index, count = key[len(PAST) + 1:], len(self._restored)
            if not (re.fullmatch(r"[0-9]{1,5}", index) and int(index) < count):
                raise ValueError(f"opponent key {shown(key)}: no such retired snapshot ({count})")
            return PAST, self._restored[int(index)]
        name, _, index = key.partition("#") if is_past_key(key) else (key, "", "")
        if name == PAST:
            if not self._past_agents:
                raise ValueError("the checkpoint has matches against past snapshots but no "
                                 "snapshots; resume with the run's own opponents setting")
            count = len(self._past_agents)
            # -1: written before dropped snapshots were saved; the newest stands in
            if not (re.fullmatch(r"-?[0-9]{1,5}", index) and -1 <= int(index) < count):
                raise ValueError(f"opponent key {shown(key)}: no such snapshot (the pool has "
                                 f"{count})")
            return name, self._past_agents[int(index)]
        if name not in self._fixed:
            try:
                self._fixed[name] = self._baseline(name)  # a key from a file
            except ValueError as error:
                raise ValueError(f"opponent key {shown(key)}: {error}") from error
            self._set_fixed_state(name)
        return name, self._fixed[name]

    def state_dict(self) -> dict:
        """Snapshots, the dropped snapshots still playing (registered by :meth:`key`), and the
        random generators of every opponent, so that ``--resume`` continues bit for bit."""
        retired, self._retired = self._retired, []
        return {"snapshots": self.snapshots,
                "generators": [agent._generator.get_state() for agent in self._past_agents],
                "retired": [{"weights": cpu_weights(agent.model),
                             "generator": agent._generator.get_state()} for agent in retired],
                "fixed": {name: {kind: generator_state(g) for kind, g in generators(agent).items()}
                          for name, agent in self._fixed.items()}}

    def load_state_dict(self, state: dict) -> None:
        """A checked state (``training.resume.check_pool``); ``retired`` and ``fixed`` are
        absent from checkpoints written before they were kept."""
        self.snapshots, self._past_agents = [], []
        for snapshot, generator in zip(state["snapshots"], state["generators"]):
            self.snapshots.append(snapshot)
            self._past_agents.append(self._frozen(snapshot, generator))
        self._restored = [self._frozen(entry["weights"], entry["generator"])
                          for entry in state.get("retired", [])]
        self._retired = []
        self._fixed_states = dict(state.get("fixed", {}))
        for name in self._fixed:
            self._set_fixed_state(name)

    def _baseline(self, spec: str):
        """:func:`training_opponent`, a network one (``ckpt:``) moved to the learner's device,
        where the matches' observations are: its forward passes batch there as the snapshots'
        do (its sampling generator, if any, stays on the CPU).  The SHA-256 of the files it
        loaded goes to :attr:`files` (checkpoints keep it: ``training.agent_files``)."""
        agent = training_opponent(spec)
        digest = files_fingerprint(spec)  # (its files just read: a ValueError if not now)
        if digest is not None:
            self.files[spec] = digest
        if isinstance(agent, PolicyAgent) and agent.device != self._device:
            agent.model.to(self._device)
            agent.device = self._device
        return agent

    def _frozen(self, weights: dict, generator) -> PolicyAgent:
        net = copy.deepcopy(self._template)
        net.load_state_dict(weights)
        agent = PolicyAgent(net, name=PAST, deterministic=False, device=self._device)
        agent._generator.set_state(generator)
        return agent

    def _set_fixed_state(self, name: str) -> None:
        """Put back the saved generator states of baseline ``name`` (a missing kind: unchanged)."""
        for kind, generator in generators(self._fixed[name]).items():
            if kind in self._fixed_states.get(name, {}):
                set_generator_state(generator, self._fixed_states[name][kind])
