"""``VectorEnv``: B Seven Rocks matches stepped together as torch tensors (see ``docs/vector.md``)."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from ..checks import checked_int, shown
from ..match_state import DEAL_RULE, deal_problem
from ..record import MAX_ROUNDS, MAX_TARGET
from ..rewards import reward_weights
from ..rules import DEFAULT_TARGET, Match
from ..tiles import ALL_TILES, NUM_ACTIONS
from . import engine, kernels, layout, observe
from .deal import MAX_SEED, deal, stream_keys
from .inputs import check_action_range, check_legal, check_tensor, checked_device
from .records import RecordKeeper
from .sampling import random_set_bits
from .state import FIELDS, BatchState
from .tables import tables

#: Most matches one env steps (``num_envs``).
MAX_ENVS = 1 << 24


@contextmanager
def _plain_tensors():
    """The mode every step runs in: outside inference mode and without autograd, whatever the
    caller's mode, so the state stays made of normal tensors and a compiled kernel sees one
    kind of input (each autograd mode would be a variant of its own)."""
    with torch.inference_mode(False), torch.no_grad():
        yield


class VectorEnv:
    """``num_envs`` matches on one device; every step moves the seat on turn in each of them.

    Rewards are per seat (``[B, 4]``, the :mod:`sevenrocks_env.rewards` formula; seats 1 and 3
    get the negative of seats 0 and 2).  A match that ends (a win, R8, or ``max_rounds``
    rounds) reports its final step's rewards and is replaced at once by the env's next match.
    """

    def __init__(self, num_envs: int = 4096, device="cpu", target: int = DEFAULT_TARGET,
                 max_rounds: int | None = 100, reward: str = "win",
                 points_scale: float | None = None, win_reward: float | None = None,
                 records: bool = False, validate: bool = True, deal_streams=None,
                 compile: bool = False):
        """``deal_streams`` (optional ``LongTensor[num_envs]``, values in ``[0, 2**40]``): env
        ``i`` is dealt from stream ``deal_streams[i]`` instead of ``i``, so several envs can play
        the same deals -- duplicate-deal evaluation gives both games of a pair one stream.

        ``compile=True`` fuses the step's and the mask's hot paths with ``torch.compile``
        (:mod:`sevenrocks_env.batched.kernels`): the same results, faster once compiled, after
        seconds of compiling on the first step of each batch size."""
        self.num_envs = checked_int("num_envs", num_envs, 1, MAX_ENVS)
        self.device = checked_device(device)
        # the bounds a record must meet (records=True writes one for every match)
        target = checked_int("target", target, 1, MAX_TARGET)
        if max_rounds is not None:
            max_rounds = checked_int("max_rounds", max_rounds, 1, MAX_ROUNDS)
        scale, win = reward_weights(reward, points_scale, win_reward)
        self.reward_mode = reward
        for name, flag in (("records", records), ("validate", validate), ("compile", compile)):
            if not isinstance(flag, (bool, np.bool_)):  # bool("no") would be True
                raise TypeError(f"{name} must be a bool, got {shown(flag)}")
        self.validate = bool(validate)
        self.compiled = bool(compile)
        tables(self.device)  # (built before a compiled kernel first reads it)
        self.settings = engine.Settings(0, target, max_rounds, scale, win)
        with torch.inference_mode(False):
            self._target = torch.tensor(target, device=self.device)  # (see engine.step)
        self.state = BatchState(self.num_envs, self.device)
        self._set_streams(0, self._deal_streams(deal_streams))
        self._records = RecordKeeper(self.num_envs, target, max_rounds) if records else None
        with torch.inference_mode(False):  # usable outside inference mode too, as in reset
            self._mask_words = torch.empty((self.num_envs, 15), dtype=torch.long,
                                           device=self.device)
        self._attach()
        self._legal_words: torch.Tensor | None = None  # the legal set packed (the mask's source)
        self._observe: observe.ObservationWriter | None = None  # made on the first observation
        self._words_fresh = self._mask_fresh = self._obs_fresh = False
        self._not_ready: str | None = "call reset() (or load()) before using the env"

    # -- settings -----------------------------------------------------------------------------

    @property
    def target(self) -> int:
        return self.settings.target

    @property
    def max_rounds(self) -> int | None:
        return self.settings.max_rounds

    @property
    def seed(self) -> int:
        return self.settings.seed

    # -- starting matches ---------------------------------------------------------------------

    def reset(self, seed: int | None = None, deals=None) -> None:
        """Start a fresh match in every env.

        Round ``r`` of env ``i``'s ``m``-th match is dealt from ``(seed, i, m, r)`` only (``i``:
        the env's deal stream, its index unless ``deal_streams`` gave another).
        ``deals=(hands, openers)`` (``LongTensor[B, 4]`` tile bitmasks, ``LongTensor[B]``) gives
        the first round's deals explicitly.  ``seed=None`` draws one.
        """
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0]) >> 1
        seed = checked_int("seed", seed, 0, MAX_SEED)
        zeros = torch.zeros_like(self.env_ids)
        if deals is None:
            hands, openers = deal(seed, self.env_ids, zeros, zeros)
        else:
            hands, openers = self._check_deals(deals)
        # a fresh state, swapped in when ready: nothing changes if this fails, and tensors the
        # old state got under torch.inference_mode() are never written in place
        with torch.inference_mode(False):  # normal tensors, also when called in inference mode
            fresh = BatchState(self.num_envs, self.device)
            fresh.start_rounds(slice(None), hands, openers)
        self.state = fresh
        self._set_streams(seed, self.env_ids)
        if self._records is not None:  # matches finished before, not popped yet, stay
            self._records.start(range(self.num_envs), hands.tolist(), openers.tolist())
        self._changed()
        self._not_ready = None

    def _check_deals(self, deals):
        if not (isinstance(deals, (tuple, list)) and len(deals) == 2):
            raise TypeError("deals must be a pair (hands LongTensor[B, 4], openers LongTensor[B])")
        hands, openers = deals
        check_tensor("deals hands", hands, (self.num_envs, 4), torch.long, self.device)
        check_tensor("deals openers", openers, (self.num_envs,), torch.long, self.device)
        in_range = (hands >= 0) & (hands <= ALL_TILES)
        counts = layout.popcount(hands.clamp(0, ALL_TILES))
        union = hands[:, 0] | hands[:, 1] | hands[:, 2] | hands[:, 3]
        good = in_range.all(1) & (counts == 7).all(1) & (union == ALL_TILES)
        good &= (openers >= 0) & (openers <= 3)
        if not bool(good.all()):
            env = int((~good).nonzero()[0, 0])
            problem = deal_problem(hands[env].tolist(), int(openers[env]))
            raise ValueError(f"deals: env {env}: {problem}; {DEAL_RULE}")
        return hands.clone(), openers.clone()

    def load(self, matches) -> None:
        """Set every env to a ``rules.Match`` in progress (mid-round allowed), e.g. for search.

        Later rounds are dealt by this env's stream (the seed and streams of the last
        :meth:`reset` or :meth:`load_state`, seed 0 if neither), whatever the match's own seed,
        and the env's ``max_rounds`` replaces the match's (a round index at or past it is a
        ``ValueError``).  A match of another ``target`` (R8), one that is over, or one waiting
        for its next deal is a ``ValueError``; nothing changes on any error.
        """
        if not isinstance(matches, (list, tuple)):
            raise TypeError(f"load: matches must be a list of {self.num_envs} rules.Match, got "
                            f"{type(matches).__name__}")
        matches = list(matches)
        if len(matches) != self.num_envs:
            raise ValueError(f"load: expected {self.num_envs} matches, got {len(matches)}")
        for i, match in enumerate(matches):
            if not isinstance(match, Match):
                raise TypeError(f"load: match {i} must be a rules.Match, got "
                                f"{type(match).__name__}")
            try:  # under this env's max_rounds: a round index at or past it is no match here
                Match.from_state(dict(match.to_state(), max_rounds=self.max_rounds))
            except (ValueError, AttributeError) as error:  # (checked before any field is read)
                raise ValueError(f"load: match {i}: {error}") from None
            if match.over or match.awaiting_deal:
                raise ValueError(f"load: match {i} is over or between rounds; only a match with "
                                 f"a seat on turn can be loaded")
            if match.target != self.target:
                raise ValueError(f"load: match {i} has target {match.target}, this env "
                                 f"{self.target}")
        histories = None  # before anything changes
        if self._records is not None:
            histories = [self._records.rounds_of(match) for match in matches]
        with torch.inference_mode(False):  # as in reset
            fresh = BatchState(self.num_envs, self.device)
            fresh.matches.copy_(self.state.matches)
            for i, match in enumerate(matches):
                fresh.set_match(i, match)
        self.state = fresh
        if histories is not None:
            for i, rounds in enumerate(histories):
                self._records.rounds[i] = rounds
        self._changed()
        self._not_ready = None

    def load_state(self, state: BatchState, seed: int = 0, deal_streams=None) -> None:
        """Trusted fast path of :meth:`load` for search: take ``state`` (a :class:`BatchState`
        of this env's size and device, e.g. :func:`~sevenrocks_env.batched.worlds.views_state`)
        as it is, without checking that it is a reachable position.  Later rounds are dealt from
        ``(seed, deal_streams[i], matches, round)`` (``deal_streams`` default: the env index; they
        replace the env's streams; copied), so envs given one stream see the same later deals.
        ``state`` itself is taken, not copied: the env steps it in place (its tensors are
        replaced by normal copies first if they were made under ``torch.inference_mode()``:
        steps run outside it).  Not for envs that keep records."""
        if self._records is not None:
            raise RuntimeError("load_state: this env keeps records; use load(matches)")
        if not isinstance(state, BatchState):
            raise TypeError(f"load_state: expected a BatchState of {self.num_envs} envs on "
                            f"{self.device}, got {type(state).__name__}")
        problem = state.layout_problem(self.num_envs, self.device)
        if problem is not None:
            raise ValueError(f"load_state: expected a BatchState of {self.num_envs} envs on "
                             f"{self.device}: {problem}")
        seed = checked_int("seed", seed, 0, MAX_SEED)
        self._set_streams(seed, self._deal_streams(deal_streams))  # checked before any change
        # made in inference mode (search's worlds): steps run outside it and write in place
        if any(getattr(state, name).is_inference() for name in FIELDS):
            with torch.inference_mode(False):
                for name in FIELDS:
                    setattr(state, name, getattr(state, name).clone())
        self.state = state
        self._changed()
        self._not_ready = None

    def _set_streams(self, seed: int, env_ids: torch.Tensor) -> None:
        """Deal from ``(seed, env_ids[i], match, round)`` from now on (``env_ids``: each env's
        deal coordinate, its index unless ``deal_streams`` says otherwise)."""
        self.settings.seed, self.env_ids = seed, env_ids
        with torch.inference_mode(False):  # as in reset
            self._streams = stream_keys(seed, env_ids)

    def _deal_streams(self, deal_streams) -> torch.Tensor:
        """The envs' deal coordinates: ``deal_streams`` checked (``LongTensor[B]`` in ``[0,
        2**40]``) and copied to this env's device, or the env indices."""
        if deal_streams is None:
            return torch.arange(self.num_envs, device=self.device)
        check_tensor("deal_streams", deal_streams, (self.num_envs,), torch.long,
                      deal_streams.device if isinstance(deal_streams, torch.Tensor)
                      else self.device)
        if bool(((deal_streams < 0) | (deal_streams > 1 << 40)).any()):
            raise ValueError("deal_streams must lie in [0, 2**40]")
        return deal_streams.to(self.device).clone()

    # -- what the seats on turn see -----------------------------------------------------------

    @property
    def current_seat(self) -> torch.Tensor:
        """``LongTensor[B]``: the seat on turn in each match (a copy: writing into it changes
        nothing; ``state.turn`` is the live one)."""
        self._require_ready()
        return self.state.turn.clone()

    @property
    def action_mask(self) -> torch.Tensor:
        """``BoolTensor[B, 113]``: the legal actions of the seat on turn (read-only; a view with
        row stride 120, rebuilt in place after each step)."""
        self._require_ready()
        if not self._mask_fresh:
            with _plain_tensors():
                layout.unpack_actions(self._turn_words(), out=self._mask_words)
            self._mask_fresh = True
        return self._mask

    def random_actions(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """``LongTensor[B]``: a uniformly random legal action for the seat on turn in each match,
        drawn from the legal set kept packed (two 64-bit words a match) without building
        ``action_mask``: the same actions as ``batched.random_actions(venv.action_mask,
        generator)`` from the same generator state (on the env's device), at a fraction of the
        cost -- random play's sampler."""
        self._require_ready()
        return random_set_bits(self._turn_words(), generator, check=False)

    def _turn_words(self) -> torch.Tensor:
        """The legal actions of the seats on turn as two 64-bit words (``layout.legal_words``),
        computed once a state."""
        if not self._words_fresh:
            with _plain_tensors():
                self._legal_words = self._kernels.turn_legal_words(self.state)
            self._words_fresh = True
        return self._legal_words

    @property
    def observation(self) -> torch.Tensor:
        """``FloatTensor[B, 238]``: ``observation.encode`` of the seat on turn (read-only)."""
        self._require_ready()
        if self._observe is None:  # a caller that only reads masks never pays for it
            with torch.inference_mode(False):  # normal tensors, even on a first read in inference
                self._observe = observe.ObservationWriter(self.num_envs, self.device, self.target)
        if not self._obs_fresh:
            self._observe(self.state)
            self._obs_fresh = True
        return self._observe.out

    def match(self, env: int) -> Match:
        """Env ``env``'s current match as a ``rules.Match`` (seedless, no history)."""
        self._require_ready()
        env = checked_int("env", env, 0, self.num_envs - 1)
        return self.state.match(env, self.target, self.max_rounds)

    # -- stepping -----------------------------------------------------------------------------

    def step(self, actions: torch.Tensor):
        """Play ``actions`` (``LongTensor[B]``) for the seats on turn.

        Returns ``(rewards FloatTensor[B, 4], terminated BoolTensor[B], truncated BoolTensor[B])``.
        With ``validate=True`` an illegal action, or a tensor of the wrong shape, dtype or device,
        raises before anything changes.
        """
        self._require_ready()
        # shape, dtype and device always (no synchronisation); legality with validate=True
        check_tensor("actions", actions, (self.num_envs,), torch.long, self.device)
        if self.validate:
            # from the legal words, not the action_mask buffer a caller may have written into
            check_legal(actions, self._turn_words(), self.state.turn, self.match)
        elif self.compiled or self.device.type != "cpu":
            # check the range first (one synchronisation): a fused kernel may fail half-way,
            # and on a GPU the failed lookup is a device-side assert that ends the process's
            # use of the device (seen on an H200, torch 2.11)
            check_action_range(actions)
        try:
            with _plain_tensors():
                if actions.is_inference():
                    actions = actions.clone()
                rewards, terminated, truncated, events = engine.step(
                    self.state, actions, self.settings, self._streams,
                    self._kernels.place_and_score, self._target)
        except (IndexError, RuntimeError) as error:
            # validate=False on the CPU: a table lookup failed, eager (IndexError, also under
            # compile past torch's recompile limit) or in the fused kernel (Inductor's
            # RuntimeError "index out of bounds"); else not an action's fault (an engine bug,
            # a failed compile), or a GPU's device-side assert
            failed_lookup = isinstance(error, IndexError) or (
                self.compiled and "index out of bounds" in str(error))
            if self.validate or self.device.type != "cpu" or not failed_lookup:
                raise
            check_action_range(actions)  # out of range: the first lookup, before any change
            # in range but illegal (a closed or unmatched slot): some fields have changed
            self._not_ready = (
                "an illegal action was played with validate=False and the step stopped "
                "half-way: the state is not one the rules reach; call reset() or load() "
                "(validate=True refuses an illegal action before anything changes)")
            raise ValueError(self._not_ready) from None
        if self._records is not None:
            self._records.append(actions, events)
        self._changed()
        return rewards, terminated, truncated

    def pop_finished_records(self) -> list[tuple[int, dict]]:
        """``[(env index, sevenrocks-record/1 dict)]`` of the matches finished since the last call
        (needs ``records=True``).  A match loaded without a history has no record unless it starts
        at 0-0 and replays to its state (:func:`~sevenrocks_env.match_state.replays_to_its_state`)."""
        if self._records is None:
            raise RuntimeError("this env keeps no records: create it with records=True")
        return self._records.pop()

    def stopped_record(self, env: int, max_rounds: int) -> dict | None:
        """The record of env ``env``'s match cut at the end of its round ``max_rounds``, for a
        caller that runs this env without a round limit (``max_rounds=None``) and stops its
        matches itself: call it at the step that ended that round (then the engine goes on with
        the match; its later moves are not the record's).  ``None`` for a match loaded without its
        history (no record is kept of it).
        ``env`` and ``max_rounds`` are checked (``TypeError``/``ValueError`` naming them, and a
        ``ValueError`` when the match has not ended exactly ``max_rounds`` rounds); an env with a
        ``max_rounds`` of its own cuts its matches itself (``pop_finished_records``)."""
        if self._records is None:
            raise RuntimeError("this env keeps no records: create it with records=True")
        if self.max_rounds is not None:
            raise RuntimeError(f"this env cuts its matches itself at max_rounds={self.max_rounds}:"
                               " their records come from pop_finished_records()")
        env = checked_int("env", env, 0, self.num_envs - 1)
        max_rounds = checked_int("max_rounds", max_rounds, 1, MAX_ROUNDS)
        return self._records.stopped_record(env, max_rounds)

    def nbytes(self) -> int:
        """Bytes of this env's tensors: the state, the deal streams (each env's id and key),
        the cached legal set (packed, and the mask unpacked from it), (once ``observation`` has
        been read) the observation and its scratch tensors, and with ``records=True`` the move
        log (its size follows the oldest unfinished match)."""
        observing = 0 if self._observe is None else self._observe.nbytes()
        logging = 0 if self._records is None else self._records.nbytes()
        kept = [self.env_ids, self._streams, self._mask_words] + (
            [] if self._legal_words is None else [self._legal_words])
        return self.state.nbytes() + sum(t.nelement() * t.element_size() for t in kept) \
            + observing + logging

    def _attach(self) -> None:
        """What is made from the rest, not kept: the mask, a view of the words each step
        rebuilds, and the kernels (eager, or compiled for this device type).  Pickle gives each
        tensor a storage of its own, so a pickled view would keep the mask of the moment it was
        pickled; compiled functions do not pickle at all: an unpickled env attaches them again
        (``deepcopy`` goes through pickling's hooks too)."""
        self._mask = self._mask_words.view(torch.bool)[:, :NUM_ACTIONS]
        self._kernels = kernels.compiled(self.device.type) if self.compiled else kernels.EAGER

    def __getstate__(self) -> dict:
        return {name: value for name, value in self.__dict__.items()
                if name not in ("_mask", "_kernels")}  # (made again by _attach)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._attach()

    def _changed(self) -> None:
        self._words_fresh = self._mask_fresh = self._obs_fresh = False

    def _require_ready(self) -> None:
        if self._not_ready is not None:
            raise RuntimeError(self._not_ready)


__all__ = ["VectorEnv"]
