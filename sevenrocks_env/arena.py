"""Duplicate-deal matches between agents, with honest statistics (``sevenrocks arena``).

Agent A plays seats 0 and 2 (team 0) against agent B on seats 1 and 3 (team 1), then the same
match is replayed with the teams swapped: pair ``i`` uses deal seed ``seed + i`` twice, and
:func:`sevenrocks_env.rules.deal` makes round ``r``'s hands and drawn opener depend only on
``(seed + i, r)``, so both matches see the same deals and luck cancels.  Every agent is re-seeded
before every match from ``(seed, pair, match, seat)``, so results are identical whatever the
number of worker processes.  Statistics: :mod:`sevenrocks_env.ratings`.

Matches are driven through :mod:`sevenrocks_env.rules` and the observation directly (not the
PettingZoo env) for speed.  A seat with a single legal action (usually a knock, R6) plays it
without asking its agent; ``decisions`` count the real choices only.

    sevenrocks arena heuristic greedy --pairs 1000 --seed 0 --workers 2 [--json]
    sevenrocks arena --round-robin random greedy heuristic search:samples=16 --pairs 200
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from . import rules
from .agents import make_agent, valid_specs
from .observation import action_mask, encode
from .ratings import bradley_terry, wilson_interval

A_SEATS = ((0, 2), (1, 3))  # agent A's seats in the first and the second match of a pair


class IllegalActionError(RuntimeError):
    """An agent returned an action its mask does not allow."""


@dataclass
class MatchResult:
    """One match: ``winner`` is a team (None if truncated at ``max_rounds``); per-team lists."""

    seed: int
    winner: int | None
    scores: tuple[int, int]
    rounds: int
    round_net: list[tuple[int, int]]  # per round: each team's score change (points - deductions)
    decisions: list[int]               # per seat
    think_s: list[float]               # per seat: seconds inside act()


def play_match(agents, seed: int, target: int = rules.DEFAULT_TARGET,
               max_rounds: int = 100) -> MatchResult:
    """Play one match with ``agents[seat]`` at each seat (R1-R8), dealt from ``seed``."""
    return run_match(agents, seed, target, max_rounds)[1]


def run_match(agents, seed: int, target: int = rules.DEFAULT_TARGET,
              max_rounds: int = 100) -> tuple[rules.Match, MatchResult]:
    """:func:`play_match`, also returning the finished :class:`~sevenrocks_env.rules.Match`
    (its history is the game record: pictures, replays)."""
    if len(agents) != 4:
        raise ValueError(f"a match needs 4 agents (one per seat), got {len(agents)}")
    match = rules.Match.new(seed, target=target, max_rounds=max_rounds)
    decisions, think = [0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0]
    while not match.over:
        seat = match.turn
        legal = rules.legal_actions(match)
        if len(legal) == 1:
            action = legal[0]
        else:
            started = time.perf_counter()
            action = agents[seat].act(encode(match, seat), action_mask(match, seat))
            think[seat] += time.perf_counter() - started
            decisions[seat] += 1
            if not rules.is_legal(match, action):
                raise IllegalActionError(
                    f"agent {getattr(agents[seat], 'name', agents[seat])!r} at seat {seat} chose "
                    f"illegal action {action!r}; legal: {legal}")
        rules.apply_action(match, int(action))
    round_net, previous = [], (0, 0)
    for log in match.history:
        round_net.append((log.scores[0] - previous[0], log.scores[1] - previous[1]))
        previous = tuple(log.scores)
    return match, MatchResult(seed, match.winner, tuple(match.scores), len(match.history),
                              round_net, decisions, think)


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
    return out


@dataclass
class ArenaResult:
    """Agent A against agent B over ``pairs`` duplicate pairs (``matches = 2 * pairs``)."""

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
    seconds_per_decision: tuple[float, float]  # (A, B), time inside act()
    decisions_per_s: float          # all decisions / wall time of the run
    wall_s: float

    TIMING = ("seconds_per_decision", "decisions_per_s", "wall_s")

    def as_dict(self, timing: bool = True) -> dict:
        data = asdict(self)
        data["ci95"], data["points_per_round"] = list(self.ci95), list(self.points_per_round)
        data["seconds_per_decision"] = list(self.seconds_per_decision)
        return data if timing else {k: v for k, v in data.items() if k not in self.TIMING}

    def table(self) -> str:
        lo, hi = self.ci95
        rows = [
            (f"{self.agent_a} (A) vs {self.agent_b} (B)",
             f"{self.pairs} duplicate pairs, {self.matches} matches, seed {self.seed}"),
            ("A match win rate",
             f"{self.win_rate:.3f}  95% CI [{lo:.3f}, {hi:.3f}] ({self.ci_method})"),
            ("mean final margin (A - B)", f"{self.mean_margin:+.1f}"),
            ("points per round A / B",
             f"{self.points_per_round[0]:.1f} / {self.points_per_round[1]:.1f}"),
            ("A round win rate", f"{self.round_win_rate:.3f}"),
            ("rounds per match", f"{self.rounds_per_match:.2f}"),
            ("truncated matches", f"{self.truncated}"),
            ("ms per decision A / B", f"{1e3 * self.seconds_per_decision[0]:.3f} / "
                                      f"{1e3 * self.seconds_per_decision[1]:.3f}"),
            ("decisions per second", f"{self.decisions_per_s:,.0f}"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _summarise(name_a, name_b, outcomes: list[PairOutcome], seed, target, wall) -> ArenaResult:
    pairs = len(outcomes)
    matches = 2 * pairs
    rounds = sum(o.rounds for o in outcomes)
    win_rate = sum(o.score for o in outcomes) / matches
    decisions = [sum(o.decisions[s] for o in outcomes) for s in (0, 1)]
    think = [sum(o.think_s[s] for o in outcomes) for s in (0, 1)]
    return ArenaResult(
        name_a, name_b, pairs, matches, seed, target, win_rate,
        wilson_interval(win_rate, pairs), "Wilson over duplicate pairs",
        sum(o.truncated for o in outcomes), sum(o.margin for o in outcomes) / matches,
        (sum(o.points_a for o in outcomes) / rounds, sum(o.points_b for o in outcomes) / rounds),
        sum(o.round_wins_a for o in outcomes) / rounds, rounds / matches,
        tuple(t / d if d else 0.0 for t, d in zip(think, decisions)),
        sum(decisions) / wall if wall > 0 else 0.0, wall)


_WORKER: dict = {}


def _worker_init(spec_a: str, spec_b: str, seed: int, target: int, max_rounds: int) -> None:
    _WORKER.update(a=[make_agent(spec_a), make_agent(spec_a)],
                   b=[make_agent(spec_b), make_agent(spec_b)],
                   seed=seed, target=target, max_rounds=max_rounds)


def _worker_pair(pair: int) -> PairOutcome:
    w = _WORKER
    return play_pair(w["a"], w["b"], w["seed"], pair, w["target"], w["max_rounds"])


def _label(agent) -> str:
    return agent if isinstance(agent, str) else getattr(agent, "name", type(agent).__name__)


def evaluate(agent_a, agent_b, pairs: int, seed: int = 0, workers: int = 1, progress: bool = False,
             target: int = rules.DEFAULT_TARGET, max_rounds: int = 100) -> ArenaResult:
    """Agent A against agent B over ``pairs`` duplicate pairs.

    ``agent_a``/``agent_b`` are spec strings, or Agent objects when ``workers == 1``.
    """
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if target < 1 or max_rounds < 1:
        raise ValueError("target and max_rounds must be >= 1")
    strings = isinstance(agent_a, str) and isinstance(agent_b, str)
    if workers > 1 and not strings:
        raise ValueError("Agent objects can only be used with workers=1; pass spec strings")
    make_agent(agent_a), make_agent(agent_b)  # fail early on a bad spec, in this process
    started = time.perf_counter()
    bar = _progress_bar(pairs, f"{_label(agent_a)} vs {_label(agent_b)}", progress)
    if workers == 1:
        duo_a, duo_b = _partnership(agent_a), _partnership(agent_b)
        outcomes = []
        for pair in range(pairs):
            outcomes.append(play_pair(duo_a, duo_b, seed, pair, target, max_rounds))
            bar.update(1)
    else:
        with _pool_context().Pool(workers, _worker_init,
                                  (agent_a, agent_b, seed, target, max_rounds)) as pool:
            outcomes = []
            chunk = max(1, min(8, pairs // (4 * workers)))
            for outcome in pool.imap(_worker_pair, range(pairs), chunksize=chunk):
                outcomes.append(outcome)
                bar.update(1)
    bar.close()
    return _summarise(_label(agent_a), _label(agent_b), outcomes, seed, target,
                      time.perf_counter() - started)


def add_evaluation_arguments(parser, seed: int = 12345) -> None:
    """``--eval-pairs``, ``--eval-seed``, ``--eval-against``, ``--json``: the arena options of
    training scripts that end with an evaluation (examples/)."""
    parser.add_argument("--eval-pairs", type=int, default=100, help="arena duplicate pairs (0 = skip)")
    parser.add_argument("--eval-seed", type=int, default=seed)
    parser.add_argument("--eval-against", nargs="+", default=["greedy", "heuristic"])
    parser.add_argument("--json", help="write the results as JSON here")


def _pool_context():
    """Fork, unless torch is loaded here: a forked child of a process whose torch thread pool
    has started can hang, so then use a fork server (the caller needs the usual
    ``if __name__ == "__main__":`` guard, as with any non-fork start method)."""
    return multiprocessing.get_context("forkserver" if "torch" in sys.modules else "fork")


def _partnership(agent) -> list:
    """Two seats' agents from a spec (two instances) or one Agent object (it plays both seats:
    agents are pure functions of the observation apart from their seeded RNG)."""
    return [make_agent(agent), make_agent(agent)] if isinstance(agent, str) else [agent, agent]


@dataclass
class RoundRobinResult:
    """Every agent against every other (A = row), and Bradley-Terry ratings over all of it."""

    agents: list[str]
    games: list[ArenaResult]
    ratings: list[dict]

    def as_dict(self, timing: bool = True) -> dict:
        return {"agents": self.agents, "games": [g.as_dict(timing) for g in self.games],
                "ratings": self.ratings}

    def table(self) -> str:
        names = self.agents
        cell = {(g.agent_a, g.agent_b): g for g in self.games}
        width = max(12, *(len(n) for n in names)) + 2
        lines = ["match win rate of row vs column, 95% CI (Wilson over duplicate pairs)",
                 " " * width + "".join(f"{n:>{24}}" for n in names)]
        for row in names:
            text = f"{row:<{width}}"
            for col in names:
                if (row, col) in cell:
                    g = cell[(row, col)]
                    text += f"{g.win_rate:>8.3f} [{g.ci95[0]:.3f},{g.ci95[1]:.3f}]"
                elif (col, row) in cell:
                    g = cell[(col, row)]
                    text += f"{1 - g.win_rate:>8.3f} [{1 - g.ci95[1]:.3f},{1 - g.ci95[0]:.3f}]"
                else:
                    text += f"{'-':>24}"
            lines.append(text)
        lines += ["", "Bradley-Terry rating (Elo scale, mean 0) +- standard error"]
        for r in sorted(self.ratings, key=lambda r: -r["rating"]):
            lines.append(f"  {r['agent']:<{width}}{r['rating']:+8.1f} +- {r['stderr']:.1f}")
        return "\n".join(lines)


def round_robin(agents: list, pairs: int, seed: int = 0, workers: int = 1, progress: bool = False,
                target: int = rules.DEFAULT_TARGET, max_rounds: int = 100) -> RoundRobinResult:
    """:func:`evaluate` on every pairing (same seed: the same deals for all), then ratings."""
    names = [_label(a) for a in agents]
    if len(set(names)) != len(names) or len(names) < 2:
        raise ValueError(f"round robin needs at least 2 distinct agents, got {names}")
    games, results = [], {}
    for i in range(len(agents)):
        for j in range(i + 1, len(agents)):
            game = evaluate(agents[i], agents[j], pairs, seed, workers, progress, target,
                            max_rounds)
            games.append(game)
            results[(i, j)] = (game.win_rate * pairs, pairs)
    return RoundRobinResult(names, games, bradley_terry(names, results))


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, description: str, enabled: bool):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=description, unit="pair", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sevenrocks arena",
        description="Duplicate-deal matches between agents (A on seats 0/2, then 1/3, same deals).",
        epilog=f"agent specs: {valid_specs()}")
    parser.add_argument("agents", nargs="+",
                        help="two agent specs (A, B), or several with --round-robin")
    parser.add_argument("--round-robin", action="store_true",
                        help="every agent against every other")
    parser.add_argument("--pairs", type=int, default=100,
                        help="duplicate pairs per pairing (default 100)")
    parser.add_argument("--seed", type=int, default=0,
                        help="deal seed of the first pair (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--target", type=int, default=rules.DEFAULT_TARGET,
                        help="match target (R8)")
    parser.add_argument("--max-rounds", type=int, default=100,
                        help="truncate a match after this many rounds")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``sevenrocks arena``: 0 on success, 2 on bad input (message on stderr)."""
    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        if args.round_robin:
            result = round_robin(args.agents, args.pairs, args.seed, args.workers,
                                 not args.no_progress, args.target, args.max_rounds)
        elif len(args.agents) != 2:
            raise ValueError(f"give exactly two agents (A B), or --round-robin; got {args.agents}")
        else:
            result = evaluate(args.agents[0], args.agents[1], args.pairs, args.seed, args.workers,
                              not args.no_progress, args.target, args.max_rounds)
    except ValueError as error:
        print(f"sevenrocks arena: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
