"""Self-play rollouts on the batched engine: every match advances in one tensor step.

:class:`BatchedSelfPlayEngine` is :class:`training.rollout.SelfPlayEngine` with the matches held
by one :class:`sevenrocks_env.batched.VectorEnv` (``reward="shaped"``) instead of N
``rules.Match`` objects.  The training data have the same meaning (see that module's docstring):

* every learner seat is its own trajectory; a transition is one of its real (non-forced)
  decisions; forced moves (one legal action) are played without a transition;
* a transition's reward is what happened to the seat's team until that seat's next decision,
  the sum of the env's per-seat shaped rewards (R5 placements, R7 deductions, R8's win reward:
  the :func:`sevenrocks_env.rewards.team0_reward` formula), ``done`` when the match ended;
* ``next_index`` links each (match, seat)'s transitions, which is what GAE follows.

Each step: one batched policy forward pass for all learner seats with a real choice (values
from the oracle critic with the hidden hands if given); every policy-network opponent
(``past`` snapshots and ``ckpt:`` specs) one forward pass per opponent for all its matches;
``greedy`` and ``heuristic`` by their batched twins; other opponents (``search``...) through
their ``act`` on the CPU side path.  The buffer fills at a
varying rate (only seats with a real choice add transitions); the step that would overflow it
records what fits and leaves the other seats' decisions unplayed (those rows of the state are
put back): they are the rollout's cut.

Cut-off (issue 17): every open transition is played on, on a copy of the open matches, with
the current policy (sampled with a generator seeded by one draw of the engine's rng, nothing
recorded, opponents' generators restored) until its seat's next real decision -- reward until
there, bootstrap with V there -- or the match's end (final reward, ``done``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from sevenrocks_env.agents.belief import HIDDEN_SEATS
from sevenrocks_env.batched import VectorEnv
from sevenrocks_env.batched import layout
from sevenrocks_env.batched.greedy import placement_points
from sevenrocks_env.batched.state import FIELDS
from sevenrocks_env.policy import MASKED_LOGIT, MaskedCategorical
from sevenrocks_env.tiles import KNOCK, NUM_SEATS, NUM_TILES

from .critic import HANDS_SIZE
from .opponents import batch_actions, restore_generators, save_generators
from .ppo import check_logits
from .engine_state import check_batch, check_counters, check_keys, check_per_match, check_players, \
    check_rng, is_torch_state
from .seats import MatchSeats, RolloutBuffer

_BITS = torch.arange(NUM_TILES)
_RELATIVE = torch.tensor(HIDDEN_SEATS)


def hidden_hands_batch(hands: torch.Tensor, seats: torch.Tensor) -> torch.Tensor:
    """``[N, 84]`` float: the hands of relative seats 1, 2, 3 of ``seats`` (``hands`` ``[N, 4]``
    tile bitmasks), 28 bits each in tile order: :func:`training.critic.hidden_hands` batched."""
    device = hands.device  # (``.to`` is free on the CPU, where the constants live)
    others = hands.gather(1, (seats[:, None] + _RELATIVE.to(device)) & 3)       # [N, 3]
    bits = _BITS.to(device)
    return ((others[:, :, None] >> bits) & 1).to(torch.float32).reshape(len(seats), HANDS_SIZE)


def sample(logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One action per row from softmax(``logits``) (masked logits: illegal ones ``-1e8``, so
    probability 0), by the inverse of the cumulative distribution: one uniform draw per row.
    The chosen ``i`` has ``cdf[i - 1] <= u < cdf[i]``, so its probability is not 0; ``u`` stays
    below the row's total.  The draws come from ``generator`` on the CPU whatever the logits'
    device, so a seed samples alike on every device.  (The Gumbel-max trick draws a number per
    action and takes ``exp`` and ``log`` over the masked entries, a slow CPU path: 3.8 ms
    against 0.75 ms at ``[3000, 113]``.)"""
    cdf = torch.softmax(check_logits(logits), dim=1).cumsum(1)
    total = cdf[:, -1:]
    point = torch.rand(total.shape, generator=generator).to(total.device) * total
    point = torch.minimum(point, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, point, right=True).squeeze(1)


class _Seats:
    """What the seats on turn face in every match: seat, mask, observation, real choice (the
    seats and the real choices also as numpy arrays for the bookkeeping, on the CPU)."""

    def __init__(self, venv: VectorEnv):
        self.state = venv.state
        self.seat_t = venv.current_seat
        self.seat = self.seat_t.cpu().numpy()
        self.mask = venv.action_mask
        self.obs = venv.observation
        self.real = (layout.legal_counts(self.mask) > 1).cpu().numpy()
        self.first_legal = self.mask.to(torch.uint8).argmax(1)  # forced: the one legal action


class BatchedSelfPlayEngine(MatchSeats):
    """``num_matches`` matches in one :class:`VectorEnv`; the interface of ``SelfPlayEngine``.

    On ``device`` live the matches, the forward passes (the model and critic given to
    :meth:`collect` must be there) and the batched opponents; the bookkeeping of seats,
    rewards and transitions (small arrays a step) and the random generators stay on the CPU."""

    def __init__(self, num_matches: int, seed: int, target: int = 250, max_rounds: int = 60,
                 points_scale: float = 0.01, win_reward: float = 1.0,
                 opponent_fraction: float = 0.0, opponent_pool=None, device="cpu"):
        super().__init__(num_matches, seed, target, max_rounds, points_scale, win_reward,
                         opponent_fraction, opponent_pool)
        self._settings = dict(target=target, max_rounds=max_rounds, reward="shaped",
                              points_scale=points_scale, win_reward=win_reward, validate=False,
                              device=device)
        self.venv = VectorEnv(num_matches, **self._settings)
        self.device = self.venv.device
        self.venv.reset(seed=int(self.rng.integers(2 ** 62)))
        self.generator = torch.Generator().manual_seed(int(self.rng.integers(2 ** 62)))
        self._rows = np.arange(num_matches)
        self.acc = np.zeros((num_matches, NUM_SEATS), dtype=np.float64)  # reward since opened
        self._return = np.zeros(num_matches, dtype=np.float64)          # team 0's, this match
        for i in range(num_matches):
            self._new_match(i)

    def _on_device(self, rows: np.ndarray) -> torch.Tensor:
        """Row indices (numpy) as a ``LongTensor`` on the engine's device."""
        return torch.from_numpy(rows).to(self.device)

    # -- match lifecycle ---------------------------------------------------------------------

    def _new_match(self, i: int) -> None:
        """Seats of env ``i``'s new match (:meth:`MatchSeats._seat_new_match`), rewards zeroed."""
        self._seat_new_match(i)
        self.acc[i] = 0.0
        self._return[i] = 0.0

    def _end_match(self, i: int, buffer: RolloutBuffer, rounds: int, winner: int,
                   truncated: bool) -> None:
        """Close env ``i``'s pending transitions with the final reward (R8), stats, new seats."""
        for seat in np.flatnonzero(self.pending[i] >= 0):
            k = self.pending[i, seat]
            buffer.rewards[k] += self.acc[i, seat]
            buffer.dones[k] = True
        self._match_stats(i, [self._return[i], -self._return[i]], None if winner < 0 else winner,
                          rounds, truncated)
        self._new_match(i)

    # -- choosing actions ---------------------------------------------------------------------

    def _opponent_actions(self, rows: np.ndarray, seats: _Seats, actions: torch.Tensor,
                          envs=None) -> None:
        """Opponents' moves for ``rows``: the rows are grouped by opponent object; a policy
        network in one forward pass, ``greedy`` and ``heuristic`` by their batched twins, any
        other agent through ``act`` per row (:func:`training.opponents.batch_actions`).
        ``envs[row]`` is the match a row of ``seats`` holds (default: the row itself)."""
        groups = defaultdict(list)
        for i in rows.tolist():
            groups[id(self.opponents[i if envs is None else envs[i]])].append(i)
        for members in groups.values():
            index = torch.tensor(members, device=self.device)
            agent = self.opponents[members[0] if envs is None else envs[members[0]]]
            actions[index] = batch_actions(agent, seats.state, seats.obs, seats.mask,
                                           index).to(self.device)

    def _count_placements(self, rows: np.ndarray, actions: torch.Tensor) -> None:
        """Stats: learner placements in ``rows`` and their points (R5), before they are played."""
        index = self._on_device(rows)
        chosen = actions[index]
        placed = chosen != KNOCK
        index, chosen = index[placed], chosen[placed]
        points = placement_points(self.venv.state, index, chosen)
        rows = index.cpu().numpy()
        self._placements[rows] += 1
        self._points[rows] += points.cpu().numpy()

    # -- rollouts -----------------------------------------------------------------------------

    @torch.no_grad()
    def collect(self, model, buffer: RolloutBuffer, num_steps: int, critic=None) -> None:
        """Fill ``buffer`` with exactly ``num_steps * num_matches`` learner decisions."""
        buffer.reset()
        capacity = num_steps * self.num_matches
        if capacity > len(buffer.actions):
            raise ValueError(f"buffer holds {len(buffer.actions)} transitions, the rollout "
                             f"needs {capacity}")
        venv = self.venv
        while buffer.size < capacity:
            seats = _Seats(venv)
            actions = seats.first_legal.clone()
            learner_on_turn = self.learner[self._rows, seats.seat]
            chosen = np.flatnonzero(seats.real & learner_on_turn)
            room = capacity - buffer.size
            chosen, extra = chosen[:room], chosen[room:]
            if len(chosen):
                self._record(model, critic, buffer, chosen, seats, actions)
            opponents = np.flatnonzero(seats.real & ~learner_on_turn)
            if len(opponents):
                self._opponent_actions(opponents, seats, actions)
            played = learner_on_turn.copy()
            played[extra] = False
            self._count_placements(np.flatnonzero(played), actions)
            rounds = venv.state.round_index.cpu().numpy() + 1
            saved = venv.state.take() if len(extra) else None
            rewards, terminated, truncated = venv.step(actions)
            rewards = rewards.cpu().numpy().astype(np.float64)
            terminated, truncated = terminated.cpu().numpy(), truncated.cpu().numpy()
            ended = terminated | truncated
            if saved is not None:  # the cut: these decisions stay unplayed
                put_back = self._on_device(extra)
                for name in FIELDS:
                    getattr(venv.state, name)[put_back] = getattr(saved, name)[put_back]
                rewards[extra], ended[extra] = 0.0, False
            self.env_steps += self.num_matches - len(extra)
            self.acc += rewards
            self._return += rewards[:, 0]
            winners = seats.seat & 1
            for i in np.flatnonzero(ended).tolist():
                self._end_match(i, buffer, int(rounds[i]), int(winners[i]) if terminated[i]
                                else -1, bool(truncated[i]))
        self._cut(model, buffer, critic)

    def _record(self, model, critic, buffer: RolloutBuffer, rows: np.ndarray, seats: _Seats,
                actions: torch.Tensor) -> None:
        """Sample the learner seats of ``rows`` in one forward pass and store the transitions."""
        index = self._on_device(rows)
        obs, mask = seats.obs[index], seats.mask[index]
        logits, values = model(obs, mask)
        hands = hidden_hands_batch(self.venv.state.hands[index], seats.seat_t[index])
        if critic is not None:
            values = critic(obs, hands)
        dist = MaskedCategorical(check_logits(logits, mask), mask)
        chosen = sample(dist.log_probs, self.generator)
        actions[index] = chosen
        start, end = buffer.size, buffer.size + len(rows)
        buffer.obs[start:end] = obs.cpu().numpy()
        buffer.hands[start:end] = hands.cpu().numpy()
        buffer.masks[start:end] = mask.cpu().numpy()
        buffer.actions[start:end] = chosen.cpu().numpy()
        buffer.logprobs[start:end] = dist.log_prob(chosen).cpu().numpy()
        buffer.values[start:end] = values.cpu().numpy()
        buffer.size = end
        self._link(buffer, rows, seats.seat[rows], np.arange(start, end))
        self._decisions[rows] += 1

    def _link(self, buffer: RolloutBuffer, rows, seat, new) -> None:
        """Close the previous transition of each (row, seat) (reward so far, successor ``new``)
        and open ``new``."""
        previous = self.pending[rows, seat]
        has = previous >= 0
        buffer.rewards[previous[has]] += self.acc[rows[has], seat[has]]
        buffer.next_index[previous[has]] = new[has]
        self.pending[rows, seat] = new
        self.acc[rows, seat] = 0.0

    def _cut(self, model, buffer: RolloutBuffer, critic=None) -> None:
        """Close every open transition at its seat's next real decision (V there) or at the
        match's end, playing on a copy of the open matches (see the module docstring).  The copy
        shrinks to the matches still open whenever half of it has closed: the last transitions
        to close (a seat that knocks round after round) do not keep every match stepping."""
        still_open = self.pending >= 0
        if not still_open.any():
            return
        generator = torch.Generator().manual_seed(int(self.rng.integers(2 ** 62)))
        envs = np.flatnonzero(still_open.any(1))     # shadow row -> match
        shadow = self._continuation(self.venv, self._on_device(envs))
        saved = save_generators(self.opponents[i] for i in envs)
        acc, still_open = self.acc[envs], still_open[envs]
        queued = []   # (transitions, observations, hidden hands) to bootstrap
        while True:
            seats = _Seats(shadow)
            rows = np.arange(len(envs))
            here = np.flatnonzero(seats.real & still_open[rows, seats.seat])
            if len(here):
                seat = seats.seat[here]
                k = self.pending[envs[here], seat]
                buffer.rewards[k] += acc[here, seat]
                index = self._on_device(here)
                queued.append((k, seats.obs[index].clone(), hidden_hands_batch(
                    shadow.state.hands[index], seats.seat_t[index])))
                still_open[here, seat] = False
            live = still_open.any(1)
            if not live.any():
                break
            if 2 * live.sum() <= len(envs):   # keep only the open matches
                keep = np.flatnonzero(live)
                envs, acc, still_open = envs[keep], acc[keep], still_open[keep]
                shadow = self._continuation(shadow, self._on_device(keep))
                continue
            actions = seats.first_legal.clone()
            learner_on_turn = self.learner[envs, seats.seat]
            index = self._on_device(np.flatnonzero(live & seats.real & learner_on_turn))
            if len(index):
                mask = seats.mask[index]
                logits, _ = model(seats.obs[index], mask)
                actions[index] = sample(torch.where(mask, check_logits(logits, mask), MASKED_LOGIT),
                                        generator)
            opponents = np.flatnonzero(live & seats.real & ~learner_on_turn)
            if len(opponents):
                self._opponent_actions(opponents, seats, actions, envs)
            rewards, terminated, truncated = shadow.step(actions)
            acc += rewards.cpu().numpy()
            for i in np.flatnonzero(live & (terminated | truncated).cpu().numpy()).tolist():
                k = self.pending[envs[i], still_open[i]]
                buffer.rewards[k] += acc[i, still_open[i]]
                buffer.dones[k] = True
                still_open[i] = False
        restore_generators(saved)
        if queued:
            k = np.concatenate([q[0] for q in queued])
            obs = torch.cat([q[1] for q in queued])
            values = model.value(obs) if critic is None else critic(
                obs, torch.cat([q[2] for q in queued]))
            buffer.bootstrap[k] = values.cpu().numpy()
        self.pending.fill(-1)
        self.acc.fill(0.0)

    def _continuation(self, venv: VectorEnv, rows: torch.Tensor) -> VectorEnv:
        """A new env holding copies of ``venv``'s matches ``rows``, dealt later rounds from the
        same streams (so a round that ends deals what the real env would deal)."""
        shadow = VectorEnv(len(rows), **self._settings)
        shadow.load_state(venv.state.take(rows), seed=self.venv.seed,
                          deal_streams=venv.env_ids[rows])
        return shadow

    # -- resume -------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Plain-Python state (the batched matches, generators, seats) so ``--resume`` replays
        the run bit for bit.  Taken between rollouts, when no transition is open."""
        state = self.venv.state
        return {
            "rng": self.rng.bit_generator.state,
            "generator": self.generator.get_state().tolist(),
            "deal_seed": self.venv.seed,
            "matches": {name: getattr(state, name).tolist() for name in FIELDS},
            "learner": self.learner.tolist(),
            "opponents": [None if name is None else self.opponent_pool.key(name, agent)
                          for name, agent in zip(self.opponent_names, self.opponents)],
            "counters": [self._placements.tolist(), self._points.tolist(),
                         self._decisions.tolist()],
            "returns": self._return.tolist(),
            "env_steps": self.env_steps,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output (from an untrusted checkpoint file).

        Every piece is checked before anything changes; ``ValueError`` names the bad piece."""
        checked = _check_state(self, state)
        self.rng.bit_generator.state = state["rng"]
        self.generator.set_state(checked["generator"])
        self.venv.reset(seed=state["deal_seed"])
        self.venv.state = checked["matches"].to(self.device)
        self.learner[:] = checked["learner"]
        for i, (name, agent) in enumerate(checked["opponents"]):
            self.opponent_names[i], self.opponents[i] = name, agent
        self._placements[:], self._points[:], self._decisions[:] = (
            np.array(c, dtype=np.int64) for c in state["counters"])
        self._return[:] = state["returns"]
        self.env_steps = state["env_steps"]
        self.pending.fill(-1)
        self.acc.fill(0.0)


_STATE_KEYS = {"rng", "generator", "deal_seed", "matches", "learner", "opponents", "counters",
               "returns", "env_steps"}


def _check_state(engine: BatchedSelfPlayEngine, state) -> dict:
    """The checked pieces of a state dict (see ``load_state_dict``); raises ``ValueError``."""
    n = engine.num_matches
    check_keys(state, _STATE_KEYS)
    check_rng(state["rng"])
    size = len(torch.Generator().get_state())
    gen = state["generator"]
    if not (isinstance(gen, list) and len(gen) == size
            and all(type(b) is int and 0 <= b < 256 for b in gen)):
        raise ValueError(f"engine state: generator must be {size} bytes (a torch.Generator state)")
    generator = torch.tensor(gen, dtype=torch.uint8)
    if not is_torch_state(generator):
        raise ValueError("engine state: generator is not a torch.Generator state")
    if not (type(state["deal_seed"]) is int and 0 <= state["deal_seed"] < 2 ** 63):
        raise ValueError("engine state: deal_seed must be an int in [0, 2**63)")
    matches = check_batch(state["matches"], n, engine.target, engine.max_rounds)
    check_per_match(state, ("learner", "opponents", "returns"), n)
    if not all(type(r) is float and abs(r) < 1e12 for r in state["returns"]):
        raise ValueError("engine state: returns must be finite floats")
    learner, opponents = check_players(state, n, engine.opponent_pool)
    check_counters(state, n)
    return {"generator": generator, "matches": matches, "learner": learner,
            "opponents": opponents}
