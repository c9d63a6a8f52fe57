"""Duplicate-deal matches between agents, with honest statistics: the arena's library.

Agent A plays seats 0 and 2 (team 0) against agent B on seats 1 and 3 (team 1), then the same
match is replayed with the teams swapped: pair ``i`` uses deal seed ``seed + i`` twice, and
:func:`sevenrocks_env.rules.deal` makes round ``r``'s hands and drawn opener depend only on
``(seed + i, r)``, so both matches see the same deals and luck cancels (every round's hands; a
drawn opener only where R2 draws: after a domino the seat that went out opens).  Every agent
is re-seeded before every match from ``(seed, pair, match, seat)``, so results are identical
whatever the number of worker processes.  Statistics: :mod:`sevenrocks_env.ratings`.

Matches are driven by :class:`sevenrocks_env.driver.MatchDriver` through the rules and the
observation directly (not the PettingZoo env) for speed: a seat with a single legal action
(usually a knock, R6) plays it without asking its agent; ``decisions`` count the real choices.

An agent spec may carry a display name, ``name=spec`` (``shipped=ckpt:path/to/policy.pt``):
results and tables use the name.  The other arena modules: :mod:`~sevenrocks_env.arena_report`
(tables, short names, progress), :mod:`~sevenrocks_env.arena_pool` (worker processes),
:mod:`~sevenrocks_env.arena_log` (the pair log that lets a long run resume) and
:mod:`~sevenrocks_env.arena_cli` (``sevenrocks arena``; :func:`main` here calls it).

    sevenrocks arena heuristic greedy --pairs 1000 --seed 0 --workers 2 [--json]
    sevenrocks arena --round-robin random greedy heuristic search:samples=16 --pairs 200
    sevenrocks arena shipped=ckpt:checkpoints/shipped/sevenrocks_ppo.pt heuristic --pairs 200
"""

from __future__ import annotations

import sys
import time
from contextlib import closing
from dataclasses import asdict, dataclass, field

import numpy as np

from . import rules
from .agents import make_agent
from .agents.spec_text import NAMED_SPEC, same_spec
from .arguments import MAX_BATCH, MAX_PAIRS, MAX_WORKERS  # the bounds, said once
from .checks import is_int, shown
from .dealing import MAX_SEED
from .driver import IllegalActionError, MatchDriver, agent_name
from .ratings import bradley_terry, mean_interval, wilson_interval
from .record import MAX_ROUNDS, MAX_TARGET

A_SEATS = ((0, 2), (1, 3))  # agent A's seats in the first and the second match of a pair

#: The arena's round limit unless told otherwise (``--max-rounds``): a match still going after
#: it is truncated and counts 1/2.
DEFAULT_MAX_ROUNDS = 100


@dataclass
class MatchResult:
    """One match: ``winner`` is a team (None if truncated at ``max_rounds``); per-seat lists."""

    seed: int
    winner: int | None
    scores: tuple[int, int]
    rounds: int
    round_net: list[tuple[int, int]]  # per round: each team's score change (points - deductions)
    decisions: list[int]               # per seat
    think_s: list[float]               # per seat: seconds inside act()
    think_cpu_s: list[float] = field(default_factory=lambda: [0.0] * 4)  # per seat: CPU s in act()


def play_match(agents, seed: int, target: int = rules.DEFAULT_TARGET,
               max_rounds: int = DEFAULT_MAX_ROUNDS) -> MatchResult:
    """One match with ``agents[seat]`` at each seat (R1-R8), dealt from ``seed`` (a spec plays
    as the agent it makes, seeded from ``(seed, seat)``)."""
    return run_match(agents, seed, target, max_rounds)[1]


def run_match(agents, seed: int, target: int = rules.DEFAULT_TARGET,
              max_rounds: int = DEFAULT_MAX_ROUNDS) -> tuple[rules.Match, MatchResult]:
    """:func:`play_match`, also returning the finished :class:`~sevenrocks_env.rules.Match`
    (its history is the game record: pictures, replays)."""
    if isinstance(agents, str) or not hasattr(agents, "__len__"):
        raise TypeError(f"agents: 4 agents or specs, one per seat, got {shown(agents)}")
    if len(agents) != 4:
        raise ValueError(f"a match needs 4 agents (one per seat), got {len(agents)}")
    match = rules.Match.new(seed, target=target, max_rounds=max_rounds)
    agents = [make_agent(agent, seed=agent_seed(seed, 0, 0, seat)) if isinstance(agent, str)
              else agent for seat, agent in enumerate(agents)]
    driver = MatchDriver(match, agents)
    driver.run()
    decisions, think, think_cpu = driver.decisions, driver.think_s, driver.think_cpu_s
    round_net, previous = [], (0, 0)
    for log in match.history:
        round_net.append((log.scores[0] - previous[0], log.scores[1] - previous[1]))
        previous = tuple(log.scores)
    return match, MatchResult(seed, match.winner, tuple(match.scores), len(match.history),
                              round_net, decisions, think, think_cpu)


@dataclass
class PairOutcome:
    """A duplicate pair seen from agent A: per-match sums (the unit of the statistics)."""

    score: float = 0.0        # A's wins (truncated = 1/2) over the two matches
    truncated: int = 0
    margin: int = 0           # sum over the two matches of A's final score - B's
    rounds: int = 0
    points_a: int = 0         # summed per-round net of A and of B
    points_b: int = 0
    round_wins_a: float = 0.0
    decisions: list[int] = field(default_factory=lambda: [0, 0])  # A, B
    think_s: list[float] = field(default_factory=lambda: [0.0, 0.0])
    think_cpu_s: list[float] = field(default_factory=lambda: [0.0, 0.0])


def agent_seed(seed: int, pair: int, game: int, seat: int) -> int:
    """The seed an agent gets before a match: a function of (seed, pair, match, seat) only."""
    return int(np.random.SeedSequence([seed, pair, game, seat]).generate_state(1)[0])


def play_pair(agents_a, agents_b, seed: int, pair: int, target: int,
              max_rounds: int) -> PairOutcome:
    """Both matches of duplicate pair ``pair`` (deal seed ``seed + pair``), A on each side once."""
    out = PairOutcome()
    for game, a_seats in enumerate(A_SEATS):
        seats = [None] * 4
        a_team, b_team = rules.team_of(a_seats[0]), rules.team_of(rules.next_seat(a_seats[0]))
        for k, seat in enumerate(a_seats):
            seats[seat] = agents_a[k]
            seats[rules.next_seat(seat)] = agents_b[k]
        for seat, agent in enumerate(seats):
            agent.seed(agent_seed(seed, pair, game, seat))
        result = play_match(seats, seed + pair, target, max_rounds)
        out.score += 0.5 if result.winner is None else float(result.winner == a_team)
        out.truncated += result.winner is None
        out.margin += result.scores[a_team] - result.scores[b_team]
        out.rounds += result.rounds
        for net in result.round_net:
            out.points_a += net[a_team]
            out.points_b += net[b_team]
            ahead = net[a_team] - net[b_team]
            out.round_wins_a += 1.0 if ahead > 0 else 0.5 if ahead == 0 else 0.0
        for seat in range(4):
            side = 0 if rules.team_of(seat) == a_team else 1
            out.decisions[side] += result.decisions[seat]
            out.think_s[side] += result.think_s[seat]
            out.think_cpu_s[side] += result.think_cpu_s[seat]
    return out


def split_name(agent) -> tuple[str, object]:
    """``(display name, agent)`` of an agent argument.

    ``"shipped=ckpt:path.pt"`` gives ``("shipped", "ckpt:path.pt")``; a spec without a name is
    its own name (``"search:samples=16"``: the ``=`` there follows a ``:``, so it is a parameter);
    an Agent object is named by its ``name`` attribute.
    """
    if not isinstance(agent, str):
        return agent_name(agent), agent
    named = NAMED_SPEC.match(agent)
    if named:
        return named.group(1), named.group(2).strip()
    name, equals, _ = agent.partition("=")
    if equals and ":" not in name:  # NAME=SPEC that NAMED_SPEC does not take
        if NAMED_SPEC.match(f"{name}=x"):
            raise ValueError(f"{agent[:80]!r}: no agent spec after {name.strip()[:40]}=")
        raise ValueError(f"display name {name.strip()[:40]!r} in {agent[:80]!r}: a name is "
                         "letters, digits and _.+- (no blanks), then =SPEC")
    return agent.strip(), agent.strip()


def split_names(agent_a, agent_b) -> tuple[tuple[str, object], tuple[str, object]]:
    """:func:`split_name` of both agents of a pairing; two different agents under one name
    (``a=heuristic a=greedy``; not two spellings of one spec) are a ``ValueError``: the table
    could not tell them apart."""
    (name_a, agent_a), (name_b, agent_b) = split_name(agent_a), split_name(agent_b)
    if name_a == name_b and isinstance(agent_a, str) and isinstance(agent_b, str) \
            and not same_spec(agent_a, agent_b):
        raise ValueError(f"both agents are named {name_a!r} but differ ({agent_a[:80]} / "
                         f"{agent_b[:80]}): give them different names (NAME=SPEC)")
    return (name_a, agent_a), (name_b, agent_b)


@dataclass
class ArenaResult:
    """Agent A against agent B over ``pairs`` duplicate pairs (``matches = 2 * pairs``).

    ``agent_a``/``agent_b`` are display names, ``spec_a``/``spec_b`` what was played (the same
    unless a spec was written ``name=spec``).
    """

    agent_a: str
    agent_b: str
    pairs: int
    matches: int
    seed: int
    target: int
    win_rate: float                 # A's share of matches (truncated = 1/2)
    ci95: tuple[float, float]
    ci_method: str
    truncated: int
    mean_margin: float              # A's final score - B's, per match
    points_per_round: tuple[float, float]  # (A, B): mean net score change per round
    round_win_rate: float           # A's share of rounds by net change (ties 1/2)
    rounds_per_match: float
    seconds_per_decision: tuple[float, float]  # (A, B), wall time inside act(), every pair
    decisions_per_s: float | None   # decisions / wall time of this sitting; None: it played none
    wall_s: float                   # this sitting's wall time
    spec_a: str = ""
    spec_b: str = ""
    cpu_seconds_per_decision: tuple[float, float] = (0.0, 0.0)  # (A, B), CPU time inside act()
    margin_ci95: tuple[float, float] | None = None  # of mean_margin, over pairs (< 4: None)
    max_rounds: int | None = None   # the round limit the matches were played under
    engine: str = ""                # "python" or "batched:<device>": which deals (pair log's)

    TIMING = ("seconds_per_decision", "cpu_seconds_per_decision", "decisions_per_s", "wall_s")

    def as_dict(self, timing: bool = True) -> dict:
        data = asdict(self)
        data["ci95"], data["points_per_round"] = list(self.ci95), list(self.points_per_round)
        data["seconds_per_decision"] = list(self.seconds_per_decision)
        data["cpu_seconds_per_decision"] = list(self.cpu_seconds_per_decision)
        data["margin_ci95"] = None if self.margin_ci95 is None else list(self.margin_ci95)
        return data if timing else {k: v for k, v in data.items() if k not in self.TIMING}

    def table(self) -> str:
        """The result as a two-column text table (:func:`sevenrocks_env.arena_report.pair_table`)."""
        from .arena_report import pair_table
        return pair_table(self)


def _summarise(names, specs, outcomes: list[PairOutcome], seed, target, wall,
               logged: int = 0, max_rounds: int | None = None, engine: str = "") -> ArenaResult:
    """The result of ``outcomes``; ``wall`` is the time this run took to play all but the first
    ``logged`` (read from a pair log), which the decisions/s figure counts."""
    pairs = len(outcomes)
    matches = 2 * pairs
    rounds = sum(o.rounds for o in outcomes)
    win_rate = sum(o.score for o in outcomes) / matches
    decisions = [sum(o.decisions[s] for o in outcomes) for s in (0, 1)]
    think = [sum(o.think_s[s] for o in outcomes) for s in (0, 1)]
    think_cpu = [sum(o.think_cpu_s[s] for o in outcomes) for s in (0, 1)]
    return ArenaResult(
        names[0], names[1], pairs, matches, seed, target, win_rate,
        wilson_interval(win_rate, pairs), "Wilson over duplicate pairs",
        sum(o.truncated for o in outcomes), sum(o.margin for o in outcomes) / matches,
        (sum(o.points_a for o in outcomes) / rounds, sum(o.points_b for o in outcomes) / rounds),
        sum(o.round_wins_a for o in outcomes) / rounds, rounds / matches,
        tuple(t / d if d else 0.0 for t, d in zip(think, decisions)),
        sum(sum(o.decisions) for o in outcomes[logged:]) / wall if logged < pairs and wall > 0
        else None, wall,
        *specs,
        tuple(t / d if d else 0.0 for t, d in zip(think_cpu, decisions)),
        mean_interval([o.margin / 2 for o in outcomes]), max_rounds, engine)


def check_settings(**settings: int) -> dict[str, int]:
    """The settings both arenas share, each an int: ``pairs`` in ``[1, MAX_PAIRS]``, ``batch``
    in ``[1, MAX_BATCH]``, ``seed`` in ``[0, MAX_SEED]`` (a deal seed); ``target`` and
    ``max_rounds`` within the bounds a game record must meet (:mod:`sevenrocks_env.record`).
    Returns them as plain ints (a NumPy integer seed reached the JSON log and the deal hash);
    ``ValueError`` names the first bad one."""
    bounds = {"pairs": (1, MAX_PAIRS), "batch": (1, MAX_BATCH), "seed": (0, MAX_SEED),
              "target": (1, MAX_TARGET), "max_rounds": (1, MAX_ROUNDS)}
    for name, value in settings.items():
        low, high = bounds[name]
        if not is_int(value):
            raise ValueError(f"{name} must be an int, got {shown(value)}")
        if not low <= value <= high:
            raise ValueError(f"{name} must be in [{low}, {high}], got {shown(value)}")
    return {name: int(value) for name, value in settings.items()}


def check_workers(workers: int, agent_a, agent_b) -> None:
    """``workers``, an int in ``[1, MAX_WORKERS]``; more than one needs both agents as spec
    strings (each worker process builds its own).  ``ValueError`` says what is wrong."""
    if not is_int(workers, 1, MAX_WORKERS):
        raise ValueError(f"workers must be an int in [1, {MAX_WORKERS}], got {shown(workers)}")
    if workers > 1 and not (isinstance(agent_a, str) and isinstance(agent_b, str)):
        raise ValueError("Agent objects can only be used with workers=1; pass spec strings")


def evaluate(agent_a, agent_b, pairs: int, seed: int = 0, workers: int = 1, progress: bool = False,
             target: int = rules.DEFAULT_TARGET, max_rounds: int = DEFAULT_MAX_ROUNDS,
             log=None) -> ArenaResult:
    """Agent A against agent B over ``pairs`` duplicate pairs.

    ``agent_a``/``agent_b`` are spec strings (optionally ``name=spec``), or Agent objects when
    ``workers == 1``.  A spec builds one agent per seat, each re-seeded before every match from
    ``(seed, pair, match, seat)``; an object plays both seats of its team, so a random agent's
    two seats share one generator (its second seed wins): reproducible, but not the same draws
    as its spec string.  ``log``: a path; every finished pair is appended there, and the pairs a
    log from an earlier run of the same pairing holds are not played again
    (:mod:`sevenrocks_env.arena_log`).
    """
    pairs, seed, target, max_rounds = check_settings(
        pairs=pairs, seed=seed, target=target, max_rounds=max_rounds).values()
    (name_a, agent_a), (name_b, agent_b) = split_names(agent_a, agent_b)
    check_workers(workers, agent_a, agent_b)
    make_agent(agent_a), make_agent(agent_b)  # fail early on a bad spec, in this process
    from .fingerprints import check_files, run_fingerprints
    files = run_fingerprints((agent_a, agent_b))  # before the agents that play are built

    def chunks(done: int):
        if workers == 1:
            duo_a, duo_b = _partnership(agent_a), _partnership(agent_b)
            check_files((agent_a, agent_b), files)
            for pair in range(done, pairs):
                yield [play_pair(duo_a, duo_b, seed, pair, target, max_rounds)]
        else:
            from .arena_pool import play_pairs_in_pool
            with closing(play_pairs_in_pool(agent_a, agent_b, seed, range(done, pairs), target,
                                            max_rounds, workers, files)) as played:  # shut down
                for outcome in played:
                    yield [outcome]

    return run_pairs(((name_a, agent_a), (name_b, agent_b)), pairs, seed, target, max_rounds,
                     "python", chunks, log, progress, files)


def run_pairs(named, pairs: int, seed: int, target: int, max_rounds: int, engine: str, chunks,
              log=None, progress: bool = False, files: tuple | None = None) -> ArenaResult:
    """The arena's common loop: the pairs a pair log already holds, then ``chunks(done)``'s
    lists of outcomes (pairs ``done, done + 1, ...`` in order), each appended to the log and
    counted on the progress bar; the summary of them all.  ``named``: ``((name, agent), ...)``
    for A and B (spec strings, or agent objects without a log); ``files``: the fingerprints of
    their files taken at the run's start (``fingerprints.run_fingerprints``), for the log."""
    from .arena_log import open_log
    from .arena_report import progress_bar

    (name_a, agent_a), (name_b, agent_b) = named
    outcomes, writer = open_log(log, (agent_a, agent_b), seed, target, max_rounds, engine, pairs,
                                files)
    started, done = time.perf_counter(), len(outcomes)
    label = f"{name_a} vs {name_b}" + (" (batched)" if engine.startswith("batched") else "")
    with closing(writer), closing(progress_bar(pairs, label, progress)) as bar:
        bar.update(done)
        for played in chunks(done) if done < pairs else ():
            outcomes += played
            writer.write(played)
            bar.update(len(played))
    specs = tuple(a if isinstance(a, str) else n for n, a in named)
    return _summarise((name_a, name_b), specs, outcomes, seed, target,
                      time.perf_counter() - started, done, max_rounds, engine)


def _partnership(agent) -> list:
    """Two seats' agents from a spec (two instances) or one Agent object (it plays both seats:
    agents are pure functions of the observation apart from their seeded RNG)."""
    return [make_agent(agent), make_agent(agent)] if isinstance(agent, str) else [agent, agent]


@dataclass
class RoundRobinResult:
    """Every agent against every other (A = row), and Bradley-Terry ratings over all of it.

    ``agents`` are display names, ``specs`` what was played, in the same order.
    """

    agents: list[str]
    games: list[ArenaResult]
    ratings: list[dict]
    specs: list[str] = field(default_factory=list)

    def as_dict(self, timing: bool = True) -> dict:
        return {"agents": self.agents, "specs": self.specs,
                "games": [g.as_dict(timing) for g in self.games], "ratings": self.ratings}

    def table(self) -> str:
        """Win-rate matrix and ratings (:func:`sevenrocks_env.arena_report.round_robin_table`)."""
        from .arena_report import round_robin_table
        return round_robin_table(self)


def round_robin(agents: list, pairs: int, seed: int = 0, workers: int = 1, progress: bool = False,
                target: int = rules.DEFAULT_TARGET, max_rounds: int = DEFAULT_MAX_ROUNDS
                ) -> RoundRobinResult:
    """:func:`evaluate` on every pairing (same seed: the same deals for all), then ratings."""
    from .arena_report import round_robin_names
    named = round_robin_names(agents)  # (a str, a name given twice: refused, saying why)
    names = [name for name, _ in named]
    check_settings(pairs=pairs, seed=seed, target=target, max_rounds=max_rounds)
    for _, agent in named:  # every spec before the first pairing plays (a typo in the last one
        check_workers(workers, agent, agent)  # was found after the others had played)
        if isinstance(agent, str):
            make_agent(agent)
    games, results = [], {}
    for i in range(len(agents)):
        for j in range(i + 1, len(agents)):
            game = evaluate(agents[i], agents[j], pairs, seed, workers, progress, target,
                            max_rounds)
            games.append(game)
            results[(i, j)] = (game.win_rate * pairs, pairs)
    specs = [a if isinstance(a, str) else n for n, a in named]
    return RoundRobinResult(names, games, bradley_terry(names, results), specs)


def main(argv: list[str] | None = None) -> int:
    """``sevenrocks arena`` (:func:`sevenrocks_env.arena_cli.main`)."""
    from .arena_cli import main as cli_main
    return cli_main(argv)


__all__ = [
    "A_SEATS", "ArenaResult", "IllegalActionError", "MatchResult", "PairOutcome",
    "RoundRobinResult", "agent_seed", "evaluate", "main", "play_match", "play_pair",
    "round_robin", "run_match", "split_name", "split_names",
]


if __name__ == "__main__":  # as `sevenrocks arena`: stdout errors in one line
    from .cli import run_as
    sys.exit(run_as("arena"))
