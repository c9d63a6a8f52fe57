"""The batched engine as a TorchRL environment (see ``docs/torchrl.md``).

:class:`SevenRocksTorchRLEnv` is one :class:`~torchrl.envs.EnvBase` with
``batch_size=[num_envs]`` over :class:`sevenrocks_env.batched.VectorEnv`, on the engine's
device (CPU or GPU).  Each step moves the seat on turn in every match, so the policy sees one
observation per match:

* ``observation`` ``[B, 238]``: ``observation.encode`` of the seat on turn (seat-relative);
* ``action_mask`` ``[B, 113]`` bool: the legal actions of the seat on turn (R3, R6);
* ``current_seat`` ``[B]``: the seat on turn, 0-3 (seats 0 and 2 are team 0);
* ``action`` ``[B]``: ``Categorical(113)`` whose ``mask`` is the current action mask (on this
  env's own spec; a ``TransformedEnv`` copies the spec, so add TorchRL's ``ActionMask()``
  transform there; under ``SerialEnv``/``ParallelEnv`` random actions cannot follow the masks:
  docs/torchrl.md);
* ``("agents", "on_turn")`` ``[B, 4, 1]`` bool: which seat is on turn, one-hot (the group is
  in every tensordict, the reset's too, as per-agent transforms such as ``RewardSum()`` need);
* ``("agents", "reward")`` ``[B, 4, 1]``: every seat's reward (``sevenrocks_env.rewards``),
  which arrives on whichever seat's move earned it: a seat's return sums its column over every
  step;
* ``done`` / ``terminated`` / ``truncated`` ``[B, 1]``: the match ended, won (R8) / cut at
  ``max_rounds``.

The rewards follow TorchRL's multi-agent layout (as in ``VmasEnv``): a group ``"agents"`` of the
four seats, ``[B, n_agents, 1]``, with the done flags shared at the root because a match ends for
all four seats at once.  Loss modules that want per-seat done flags expand the root ones, as the
TorchRL multi-agent tutorials do.

Auto-reset.  The engine replaces a finished match by the env's next match inside ``step`` (it
keeps no final position: a finished match has no seat on turn).  So a step that ends a match
reports ``done`` together with the *next* match's first observation under ``"next"``, and the
partial ``_reset`` TorchRL then asks for (``"_reset"`` true for exactly those envs) changes nothing:
the next match has already started.  Consequences: value targets must not bootstrap through a
done step -- with the default ``reward="win"`` a truncated match (``max_rounds``) ends with reward
0, so treat ``truncated`` as terminal, or use ``max_rounds=None``.  A ``_reset`` that names a
match still in progress is refused (the engine cannot restart one match alone); ``reset()``
without ``"_reset"`` restarts every match.  (TorchRL's private "native autoreset" path for such
engines writes NaN placeholders under ``"next"`` instead; real observations need no masking
before arithmetic, and the done flags say which ones begin a new match.)
"""

from __future__ import annotations


import numpy as np
try:
    import torch
    from tensordict import TensorDict, TensorDictBase
    from torchrl.data import Bounded, Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase
except ModuleNotFoundError as missing:  # say which extra, not a bare ModuleNotFoundError
    if str(missing.name).partition(".")[0] not in ("torch", "tensordict", "torchrl"):
        raise
    raise ImportError(f"sevenrocks_env.torchrl_env needs TorchRL ({missing.name} is missing): "
                      "pip install -e \".[torchrl]\"") from missing

from .batched import VectorEnv
from .batched.deal import MAX_SEED
from .checks import checked_int
from .env import observation_bounds
from .observation import OBS_SIZE
from .tiles import NUM_ACTIONS

#: The group key of the per-seat entries (TorchRL's multi-agent convention).
GROUP = "agents"
NUM_SEATS = 4


class SevenRocksTorchRLEnv(EnvBase):
    """``num_envs`` Seven Rocks matches as one batched TorchRL env (module docs for the keys).

    ``device`` is where the engine's tensors live and where the env's tensordicts are.
    ``seed`` (or :meth:`set_seed`) fixes every deal of every later :meth:`reset`; the other
    keyword arguments go to :class:`~sevenrocks_env.batched.VectorEnv` (``target``,
    ``max_rounds``, ``reward``, ``points_scale``, ``win_reward``, ``validate``).  With
    ``validate=True`` (the default) an illegal action raises ``ValueError`` naming the env,
    the seat and the legal actions.
    """

    def __init__(self, num_envs: int = 1024, device="cpu", seed: int | None = None, **kwargs):
        if kwargs.pop("records", False):  # (records=False, the VectorEnv default, is harmless)
            raise TypeError("records are not available through the TorchRL env; use "
                            "sevenrocks_v0.vector_env(records=True)")
        self.vector_env = VectorEnv(num_envs=num_envs, device=device, **kwargs)
        super().__init__(device=self.vector_env.device, batch_size=torch.Size([num_envs]))
        self._seed_rng = np.random.default_rng(self._check_seed(seed))
        self._finished = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self._started = False
        self._make_specs()

    # -- specs --------------------------------------------------------------------------------

    def _make_specs(self) -> None:
        batch, device = self.batch_size, self.device
        n = batch[0]
        max_rounds = self.vector_env.max_rounds
        if max_rounds is None:
            observation = Unbounded(shape=(n, OBS_SIZE), dtype=torch.float32, device=device)
        else:
            low, high = observation_bounds(self.vector_env.target, max_rounds)
            observation = Bounded(low=torch.as_tensor(low, device=device).expand(n, OBS_SIZE),
                                  high=torch.as_tensor(high, device=device).expand(n, OBS_SIZE),
                                  shape=(n, OBS_SIZE), dtype=torch.float32, device=device)
        self.observation_spec = Composite(
            observation=observation,
            action_mask=Categorical(2, shape=(n, NUM_ACTIONS), dtype=torch.bool, device=device),
            current_seat=Categorical(NUM_SEATS, shape=(n,), dtype=torch.long, device=device),
            **{GROUP: Composite(on_turn=Categorical(2, shape=(n, NUM_SEATS, 1), dtype=torch.bool,
                                                    device=device),
                                shape=(n, NUM_SEATS), device=device)},
            shape=batch, device=device)
        self.action_spec = Categorical(NUM_ACTIONS, shape=(n,), dtype=torch.long, device=device)
        self.reward_spec = Composite(
            {GROUP: Composite(reward=Unbounded(shape=(n, NUM_SEATS, 1), dtype=torch.float32,
                                               device=device),
                              shape=(n, NUM_SEATS), device=device)},
            shape=batch, device=device)
        flag = Categorical(2, shape=(n, 1), dtype=torch.bool, device=device)
        self.done_spec = Composite(done=flag.clone(), terminated=flag.clone(),
                                   truncated=flag.clone(), shape=batch, device=device)

    # -- seeding ------------------------------------------------------------------------------

    @staticmethod
    def _check_seed(seed):
        if seed is None:
            return None
        return checked_int("seed", seed, 0, MAX_SEED)

    def _set_seed(self, seed: int | None) -> None:
        """Every later full reset draws its deal-stream seed from a generator seeded here."""
        self._seed_rng = np.random.default_rng(self._check_seed(seed))

    # -- reset and step -----------------------------------------------------------------------

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        if kwargs.pop("set_state", None):  # TorchRL's flag for envs that can be set to a state
            raise NotImplementedError("this env cannot be reset to a given state "
                                      "(set_state=True); use env.load(matches)")
        if kwargs:  # reset(seed=...) was silently ignored: no reproducibility, no error
            hint = "; seed the env with set_seed(seed), then reset()" if "seed" in kwargs else ""
            raise TypeError(f"reset() got unexpected keyword argument(s) {sorted(kwargs)}{hint}")
        reset = None if tensordict is None else tensordict.get("_reset", None)
        vec = self.vector_env
        if reset is not None and self._started:
            reset = reset.reshape(self.batch_size).to(torch.bool)
            in_progress = reset & ~self._finished
            if bool(in_progress.any()) and not bool(reset.all()):
                envs = in_progress.nonzero().squeeze(1).tolist()
                raise ValueError(
                    f"partial reset of matches in progress (envs {envs[:8]}"
                    f"{' ...' if len(envs) > 8 else ''}): the engine restarts a single match only "
                    f"when it ends (automatically); call reset() without '_reset' to restart all "
                    f"(a step limit such as StepCounter(max_steps) cannot cut single matches: "
                    f"cut them with max_rounds=N)")
            if not bool(in_progress.any()):
                # (new tensors, not in place: one made under torch.inference_mode, as TorchRL's
                # evaluation rollouts run, cannot be changed in place outside it)
                self._finished = self._finished & ~reset  # restarted inside step already
                return self._observe(terminated=None, truncated=None)
        seed = int(self._seed_rng.integers(0, MAX_SEED, endpoint=True))
        vec.reset(seed=seed)
        self._started = True
        self._finished = torch.zeros_like(self._finished)
        return self._observe(terminated=None, truncated=None)

    def load(self, matches) -> TensorDictBase:
        """Set every match to a ``rules.Match`` in progress (:meth:`VectorEnv.load
        <sevenrocks_env.batched.VectorEnv.load>`: mid-round allowed, later rounds from the
        engine's deal stream) and return the seats on turn's view as :meth:`reset` does, with
        ``done`` false; the action spec's mask follows the loaded positions.  (Loading through
        ``env.vector_env`` alone leaves that mask, and any tensordict held, at the old
        positions: ``rand_action`` and ``rollout`` without a policy then play illegal moves.)"""
        self.vector_env.load(matches)  # checks everything before changing anything
        self._started = True
        self._finished = torch.zeros_like(self._finished)
        return self._observe(terminated=None, truncated=None)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        rewards, terminated, truncated = self.vector_env.step(tensordict.get("action"))
        self._finished = terminated | truncated
        out = self._observe(terminated, truncated)
        out.set((GROUP, "reward"), rewards.unsqueeze(-1))
        return out

    def _observe(self, terminated, truncated) -> TensorDictBase:
        """The seats on turn's view, copied out of the engine's reused buffers."""
        vec = self.vector_env
        mask = vec.action_mask.clone()
        self.action_spec.update_mask(mask)
        if terminated is None:
            terminated = truncated = torch.zeros_like(self._finished)
        seat = vec.current_seat
        on_turn = torch.nn.functional.one_hot(seat, NUM_SEATS).bool().unsqueeze(-1)
        return TensorDict({
            "observation": vec.observation.clone(),
            "action_mask": mask,
            "current_seat": seat,
            GROUP: TensorDict({"on_turn": on_turn}, batch_size=(*self.batch_size, NUM_SEATS),
                              device=self.device),
            "done": (terminated | truncated).unsqueeze(-1),
            "terminated": terminated.unsqueeze(-1),
            "truncated": truncated.unsqueeze(-1),
        }, batch_size=self.batch_size, device=self.device)


__all__ = ["GROUP", "SevenRocksTorchRLEnv"]
