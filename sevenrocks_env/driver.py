"""How a match proceeds, in one place: forced moves play themselves, every real choice is asked.

A seat is *forced* when it has exactly one legal action: a knock (R6: it holds no tile that
fits), or a single tile that fits a single slot.  :class:`MatchDriver` moves a
:class:`~sevenrocks_env.rules.Match` forward:

* a forced move is played without asking anyone (``forced=True`` in the move hook);
* a seat with a real choice and an agent is asked ``agent.act(observation, action_mask)`` with
  exactly its own observation (:mod:`sevenrocks_env.observation`), and the answer is checked
  (an agent with ``needs_history`` also gets the round's public plays: :func:`agent_action`);
* a seat without an agent (``None``: a learner, a human) stops the driver, which returns the
  seat; the caller decides and hands the action to :meth:`MatchDriver.play`.

The arena drives whole matches with it; the single-agent view, ``play`` and the trainer's
Python rollouts (``training/rollout.py``, also for the cut-off continuation) use it too, each
stopping at its own seats.  The batched engine's rollouts (``training/batched_rollout.py``) apply
the same rule to tensors: a row whose mask has one legal action plays it.

    driver = MatchDriver(match, [heuristic, None, heuristic, greedy])
    while (seat := driver.advance()) is not None:
        driver.play(choose(seat))            # seat 1 decides outside the driver
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from . import rules
from .checks import is_int, shown
from .observation import action_mask, encode
from .public_round import public_round, reads_history

#: ``on_move(match, seat, action, points, forced)``: called after every move is applied.
MoveHook = Callable[[rules.Match, int, int, int, bool], None]


class AgentError(RuntimeError):
    """An agent failed while choosing a move (its ``act`` raised: a hostile or broken
    checkpoint, a bug of its own); the message names the agent and the seat."""


class IllegalActionError(AgentError):
    """An agent returned an action its mask does not allow."""


def forced_action(match: rules.Match) -> int | None:
    """The seat on turn's only legal action (a knock or a single fitting placement, R6), or
    ``None`` when it has a real choice."""
    legal = rules.legal_actions(match)
    return legal[0] if len(legal) == 1 else None


def agent_action(agent, match: rules.Match, seat: int):
    """What ``agent`` answers for ``seat`` (on turn in ``match``): ``agent.act`` with the seat's
    observation and action mask, and for an agent with ``needs_history = True`` the round's
    public plays as ``history=`` (:mod:`sevenrocks_env.public_round`).  Every driver asks its
    agents through here.  The answer must be an integer (Python or NumPy; a ``TypeError``
    names anything else, such as a tensor or a one-element array, where an illegal-move message
    would show ``tensor(49)`` among the legal actions); whether it is legal is the driver's
    check."""
    observation, mask = encode(match, seat), action_mask(match, seat)
    if reads_history(agent):
        answer = agent.act(observation, mask, history=public_round(match))
    else:
        answer = agent.act(observation, mask)
    if is_int(answer):
        return int(answer)
    value = shown(answer)  # an object's own repr is never called: "<Tensor>"
    raise TypeError("act must return an int (a Python or NumPy integer), got "
                    + (value if value.startswith("<") else f"{type(answer).__name__} {value}")
                    + ("; a tensor or array needs .item()" if hasattr(answer, "item") else ""))


#: The longest display name :func:`agent_name` gives (a longer one is cut, ending ``...``):
#: a spec with a long checkpoint path fits (messages name the file).
MAX_AGENT_NAME = 4096


def agent_name(agent) -> str:
    """An agent's display name: its ``name`` attribute where that is a non-empty printable
    ``str``, else its class name (``name`` is optional: ``None``, ``5`` or ``""`` is no name);
    unprintable characters escaped, at most :data:`MAX_AGENT_NAME` characters."""
    try:
        name = getattr(agent, "name", None)
    except Exception:  # a property that raises is no name either
        name = None
    if not (isinstance(name, str) and name.strip() and name.isprintable()):
        name = type(agent).__name__
        name = name if name.isprintable() else ascii(name)[1:-1]
    name = str.__str__(name)  # (a str subclass: plain text)
    return name if len(name) <= MAX_AGENT_NAME else name[:MAX_AGENT_NAME - 3] + "..."


def check_agents(agents: list) -> None:
    """Every seat's agent is ``None`` or an object with an ``act`` method; a spec string
    (``"greedy"``), a class or anything else is a ``TypeError`` before the match starts, not
    at that seat's first choice."""
    for seat, agent in enumerate(agents):
        if agent is None or (callable(getattr(agent, "act", None))
                             and not isinstance(agent, type)):
            continue
        hint = (f"; make_agent({agent[:40]!r}) builds one (sevenrocks_env.agents)"
                if isinstance(agent, str) else
                f"; {agent.__name__}() builds one" if isinstance(agent, type) else "")
        raise TypeError(f"seat {seat}: an agent must be an Agent (with act(observation, "
                        f"action_mask)) or None, got {type(agent).__name__} {shown(agent)}{hint}")


@contextmanager
def blamed_on(agent, where: str = "") -> Iterator[None]:
    """Any exception (not ``KeyboardInterrupt``) raised inside is an :class:`AgentError` naming
    ``agent`` (and ``where``, e.g. ``" at seat 2"``): a hostile checkpoint's non-finite outputs
    stop an arena, a trainer or a web game with a message saying whose move failed, in every
    driver, the batched ones included."""
    try:
        yield
    except Exception as error:
        raise AgentError(f"agent {agent_name(agent)!r}{where} failed: "
                         f"{type(error).__name__}: {error}") from error


def checked_choice(agent, match: rules.Match, seat: int, legal: list[int]) -> int:
    """``agent``'s real choice for ``seat`` (on turn, ``legal``: its legal actions, more than
    one): :func:`agent_action`, a failure inside it an :class:`AgentError` and an illegal answer
    an :class:`IllegalActionError`, each naming the agent and the seat."""
    with blamed_on(agent, f" at seat {seat}"):
        action = agent_action(agent, match, seat)
    if not rules.is_legal(match, action):
        raise IllegalActionError(
            f"agent {agent_name(agent)!r} at seat {seat} chose illegal action {action!r}; "
            f"legal: {legal}")
    return int(action)


class MatchDriver:
    """Plays ``match`` forward with ``agents[seat]`` (``None``: the seat decides from outside).

    ``agents`` is a sequence of four or a mapping seat -> agent (missing seats are outside
    seats), each an Agent or ``None`` (:func:`check_agents`: a spec string is a
    ``TypeError``).  ``ask_forced`` lists outside seats that are stopped for even when forced
    (an env whose learner must step every move); otherwise forced moves of every seat play
    themselves.
    ``on_move`` is called after every move.  ``decisions[seat]`` counts the real choices asked
    of an agent or taken from outside, ``think_s[seat]`` the seconds spent inside ``act`` (wall
    time) and ``think_cpu_s[seat]`` the process's CPU seconds there (what the agent costs,
    whatever else the machine runs, as long as torch uses one thread: with more, every thread's
    time counts, spin-waits included).
    """

    def __init__(self, match: rules.Match, agents: Sequence | Mapping,
                 on_move: MoveHook | None = None, ask_forced: Sequence[int] = ()):
        if isinstance(agents, Mapping):
            agents = [agents.get(seat) for seat in range(4)]
        agents = list(agents)
        if len(agents) != 4:
            raise ValueError(f"a match needs 4 seats' agents (None for a seat played from "
                             f"outside), got {len(agents)}")
        check_agents(agents)
        self.match = match
        self.agents = agents
        self.on_move = on_move
        self.ask_forced = frozenset(ask_forced)
        self.decisions = [0, 0, 0, 0]
        self.think_s = [0.0, 0.0, 0.0, 0.0]
        self.think_cpu_s = [0.0, 0.0, 0.0, 0.0]

    @property
    def stopped(self) -> bool:
        """The match is over, or a seedless match waits for its next deal (``start_round``)."""
        return self.match.over or self.match.awaiting_deal

    def advance(self) -> int | None:
        """Play forced moves and agents' choices until an outside seat must decide (return that
        seat) or the driver is :attr:`stopped` (return ``None``)."""
        match = self.match
        while not self.stopped:
            seat = match.turn
            agent = self.agents[seat]
            if agent is None and seat in self.ask_forced:
                return seat
            legal = rules.legal_actions(match)
            if len(legal) == 1:
                self._apply(seat, legal[0], forced=True)
            elif agent is None:
                return seat
            else:
                self._apply(seat, self._ask(agent, seat, legal), forced=False)
        return None

    def play(self, action) -> int:
        """Apply an outside seat's ``action`` (checked, ``ValueError`` if illegal); returns the
        points it scored (R5)."""
        match = self.match
        if self.stopped:
            raise ValueError("the match is over (or waits for a deal): no move to play")
        if not rules.is_legal(match, action):
            raise ValueError(f"seat {match.turn}: illegal action {action!r}; "
                             f"legal: {rules.legal_actions(match)}")
        forced = len(rules.legal_actions(match)) == 1
        return self._apply(match.turn, int(action), forced)

    def run(self) -> rules.Match:
        """Drive to the end (or to the next deal of a seedless match); every seat needs an agent."""
        seat = self.advance()
        if seat is not None:
            raise ValueError(f"seat {seat} has no agent: use advance() and play() for it")
        return self.match

    def _ask(self, agent, seat: int, legal: list[int]) -> int:
        started, cpu = time.perf_counter(), time.process_time()
        action = checked_choice(agent, self.match, seat, legal)
        self.think_s[seat] += time.perf_counter() - started
        self.think_cpu_s[seat] += time.process_time() - cpu
        return action

    def _apply(self, seat: int, action: int, forced: bool) -> int:
        if not forced:
            self.decisions[seat] += 1
        points = rules.apply_action(self.match, action)
        if self.on_move is not None:
            self.on_move(self.match, seat, action, points, forced)
        return points


__all__ = ["AgentError", "IllegalActionError", "MatchDriver", "MoveHook", "agent_action",
           "agent_name", "blamed_on", "check_agents", "checked_choice", "forced_action"]
