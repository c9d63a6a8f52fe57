"""Arena audit: properties of the duplicate-deal arena that no other test pinned down (each
test here failed on a plausible slip in the code: a swapped side, a statistic over the wrong
unit, a pair lost or played twice by the workers, a corrupt log line or result file read as
the arena's).  The pair log, saved results, the command line and the ladder:
``test_arena_results_audit.py``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from sevenrocks_env import arena, rules
from sevenrocks_env.agents import GreedyAgent, RandomAgent
from sevenrocks_env.ratings import fit_bradley_terry

torch = pytest.importorskip("torch")
from sevenrocks_env.arena_batched import evaluate_batched, play_pairs_batched  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the duplicate pair -----------------------------------------------------------------------

class _Recording(RandomAgent):
    """A random agent that records every seed it is given."""

    def __init__(self):
        self.seeds = []
        super().__init__()
        self.seeds.clear()  # (the constructor seeds it once)

    def seed(self, seed=None):
        self.seeds.append(seed)
        return super().seed(seed)


def test_every_agent_is_seeded_from_its_pair_match_and_seat():
    """Module docs: every agent is re-seeded before every match from (seed, pair, match, seat);
    a seed shared by the two matches made two random partnerships replay one game with the
    sides swapped, so every pair split 1-1 whatever the agents."""
    duo_a, duo_b = [_Recording(), _Recording()], [_Recording(), _Recording()]
    arena.play_pair(duo_a, duo_b, seed=7, pair=3, target=60, max_rounds=5)
    for game, a_seats in enumerate(arena.A_SEATS):
        b_seats = [rules.next_seat(s) for s in a_seats]
        for k in range(2):
            assert duo_a[k].seeds[game] == arena.agent_seed(7, 3, game, a_seats[k])
            assert duo_b[k].seeds[game] == arena.agent_seed(7, 3, game, b_seats[k])
    everyone = [s for agent in duo_a + duo_b for s in agent.seeds]
    assert len(everyone) == 8 and len(set(everyone)) == 8
    # from the pair and the seed too (not only agent_seed's word): another pair or another
    # seed gives every agent other seeds
    for seed, pair in ((7, 4), (8, 3)):
        others = [_Recording() for _ in range(4)]
        arena.play_pair(others[:2], others[2:], seed=seed, pair=pair, target=60, max_rounds=5)
        seeds = [s for agent in others for s in agent.seeds]
        assert len(set(seeds)) == 8 and not set(seeds) & set(everyone), (seed, pair)


def test_random_against_random_does_not_split_every_pair():
    """The two matches of a pair share the deals, not the draws: some pair of two random
    partnerships is won (or lost) twice."""
    scores = [arena.play_pair([RandomAgent(), RandomAgent()], [RandomAgent(), RandomAgent()],
                              0, pair, 250, 100).score for pair in range(8)]
    assert any(score != 1.0 for score in scores), scores


class _Timed(GreedyAgent):
    """A greedy agent that counts its decisions and spends 1 s of a fake clock on each."""

    def __init__(self, clock):
        super().__init__()
        self.clock, self.calls = clock, 0

    def act(self, observation, action_mask, **kwargs):
        self.calls += 1
        self.clock["now"] += 1.0
        return super().act(observation, action_mask)


def test_a_pair_books_each_side_s_decisions_and_think_time_to_that_side(monkeypatch):
    """A's decisions and time inside act() are A's in the outcome, B's are B's, in both matches
    (A on team 0, then on team 1); only A's agent takes time here."""
    from sevenrocks_env import driver
    clock = {"now": 0.0}
    monkeypatch.setattr(driver, "time", SimpleNamespace(perf_counter=lambda: clock["now"],
                                                        process_time=lambda: clock["now"]))
    a = _Timed(clock)
    b = RandomAgent()
    b_calls = []
    b_act = b.act
    b.act = lambda observation, mask: b_calls.append(1) or b_act(observation, mask)
    out = arena.play_pair([a, a], [b, b], seed=5, pair=0, target=250, max_rounds=100)
    assert a.calls != len(b_calls)  # (so a swap of the sides would show)
    assert out.decisions == [a.calls, len(b_calls)]
    assert out.think_s == [float(a.calls), 0.0] and out.think_cpu_s == [float(a.calls), 0.0]


@pytest.mark.parametrize("engine", ["python", "batched"])
def test_points_per_round_are_a_s_then_b_s(engine):
    """A's net points per round minus B's, times the rounds played, is A's total final margin
    (margin = points_a - points_b for every match): the two columns are not swapped."""
    if engine == "python":
        result = arena.evaluate("greedy", "random", pairs=4, seed=1)
    else:
        result = evaluate_batched("greedy", "random", pairs=4, seed=1)
    rounds = result.rounds_per_match * result.matches
    a, b = result.points_per_round
    assert result.mean_margin > 0  # greedy beats random: the sign says which column is whose
    assert (a - b) * rounds == pytest.approx(result.mean_margin * result.matches)


def test_round_robin_rates_pairs_as_trials_with_each_row_s_score(monkeypatch):
    """The ratings are the Bradley-Terry fit of each pairing's pair score (win rate x pairs,
    A = the earlier agent), one trial a pair, not a match: the standard errors say so."""
    rates = {("a", "b"): 0.75, ("a", "c"): 0.9, ("b", "c"): 0.6}

    def fake_evaluate(agent_a, agent_b, pairs, *args, **kwargs):
        return SimpleNamespace(agent_a=agent_a, agent_b=agent_b,
                               win_rate=rates[(agent_a, agent_b)])
    monkeypatch.setattr(arena, "evaluate", fake_evaluate)
    monkeypatch.setattr(arena, "make_agent", lambda spec: None)
    result = arena.round_robin(["a", "b", "c"], pairs=40)
    expected = fit_bradley_terry(["a", "b", "c"], {(0, 1): (30.0, 40), (0, 2): (36.0, 40),
                                                   (1, 2): (24.0, 40)})
    assert [r["rating"] for r in result.ratings] == pytest.approx(list(expected.rating))
    assert [r["stderr"] for r in result.ratings] == \
        pytest.approx([expected.stderr(i) for i in range(3)])
    assert result.ratings[0]["rating"] > result.ratings[1]["rating"] > result.ratings[2]["rating"]


# -- the batched arena ------------------------------------------------------------------------

def _real_choices(record, a_team: int, rounds: int) -> list[int]:
    """(A's, B's) moves with more than one legal action in the first ``rounds`` rounds of a
    game record (the decisions the arena counts: a forced move plays itself)."""
    from sevenrocks_env import record as game_record
    choices = [0, 0]
    for match, _, r in game_record.replay(record):
        if r < rounds and not match.over and not match.awaiting_deal \
                and len(rules.legal_actions(match)) > 1:
            choices[0 if rules.team_of(match.turn) == a_team else 1] += 1
    return choices


def test_the_batched_arena_counts_only_real_choices_as_decisions():
    """As in the unbatched arena, a forced move (one legal action, usually a knock) is played
    without asking the agent and is not a decision: each side's decisions are its moves that
    had a choice, per the games' records."""
    from sevenrocks_env.batched_agents import BatchedGreedy, BatchedRandom
    outcomes, records = play_pairs_batched(BatchedGreedy(), BatchedRandom(), seed=3, first=0,
                                           pairs=3, target=250, max_rounds=100, records=True)
    forced = 0
    for pair, out in enumerate(outcomes):
        expected = [0, 0]
        for a_team in (0, 1):
            record = records[2 * pair + a_team]
            assert record["winner"] is not None  # (not cut off: every round counted)
            choices = _real_choices(record, a_team, len(record["rounds"]))
            expected = [expected[0] + choices[0], expected[1] + choices[1]]
            forced += sum(len(rnd["moves"]) for rnd in record["rounds"]) - sum(choices)
        assert out.decisions == expected, pair
    assert forced > 0  # there were forced moves to leave out


def test_a_truncated_batched_match_keeps_the_scores_it_reached():
    """A match cut at max_rounds counts 1/2 to each side, and its margin and points are the
    scores after its last counted round, not zero: those of the same games (same deals, same
    draws) played on, per their records."""
    from sevenrocks_env.batched_agents import BatchedGreedy, BatchedRandom
    cut = play_pairs_batched(BatchedGreedy(), BatchedRandom(), seed=4, first=0, pairs=2,
                             target=600, max_rounds=2)
    _, records = play_pairs_batched(BatchedGreedy(), BatchedRandom(), seed=4, first=0, pairs=2,
                                    target=600, max_rounds=100, records=True)
    for pair, out in enumerate(cut):
        assert out.truncated == 2 and out.score == 1.0 and out.rounds == 4
        points = [0, 0]
        for a_team in (0, 1):
            scores = records[2 * pair + a_team]["rounds"][1]["scores"]  # after round 2
            points = [points[0] + scores[a_team], points[1] + scores[1 - a_team]]
        assert [out.points_a, out.points_b] == points, pair
        assert out.margin == points[0] - points[1]
    assert any(o.points_a or o.points_b for o in cut)


def test_batched_think_time_is_each_agent_call_s_time_shared_by_its_envs(fake_clocks):
    """Every call of a side's agent takes 1 s (0.25 s of CPU) of a fake clock, shared by the
    envs it decided for: each side's think times add up to its own calls' time, whatever the
    batch (a call for 6 envs is not 6 s, and B's calls are not A's)."""
    from sevenrocks_env import arena_batched
    from sevenrocks_env.batched_agents import BatchedGreedy, BatchedRandom

    calls = [0, 0]

    class CountingGreedy(BatchedGreedy):
        def actions(self, env, envs, context):
            calls[0] += 1
            return super().actions(env, envs, context)

    class CountingRandom(BatchedRandom):
        def actions(self, env, envs, context):
            calls[1] += 1
            return super().actions(env, envs, context)

    fake_clocks(arena_batched, 1.0, 0.25)
    outcomes = play_pairs_batched(CountingGreedy(), CountingRandom(), seed=3, first=0, pairs=3,
                                  target=60, max_rounds=20)
    for side in (0, 1):
        decisions = sum(o.decisions[side] for o in outcomes)
        assert decisions > calls[side] > 0  # calls decided for several envs at once
        assert sum(o.think_s[side] for o in outcomes) == pytest.approx(calls[side])
        assert sum(o.think_cpu_s[side] for o in outcomes) == pytest.approx(0.25 * calls[side])


# -- worker processes: every pair once, in order, with the run's settings ------------------------

def _spans_in_this_process(seen):
    """A stand-in for ``arena_pool.play_spans_in_pool`` that plays each span here (as a worker
    would) and records it."""
    from sevenrocks_env.batched_agents import batched_agent

    def play(spec_a, spec_b, seed, spans, target, max_rounds, workers, threads=1, files=None):
        side_a, side_b = batched_agent(spec_a), batched_agent(spec_b)
        for first, count in spans:
            seen.append((first, count))
            yield play_pairs_batched(side_a, side_b, seed, first, count, target, max_rounds)
    return play


@pytest.mark.parametrize("pairs, workers, batch", [(1, 2, 4), (2, 3, 4), (5, 2, 2), (7, 3, 4)])
def test_worker_spans_cover_every_pair_once_in_order(monkeypatch, pairs, workers, batch):
    """``workers`` > 1: the pairs are cut into spans of at most ``batch`` pairs, enough for
    every worker, which cover each pair exactly once, in order, and give the one-process
    result (fewer pairs than workers included)."""
    from sevenrocks_env import arena_pool
    seen = []
    monkeypatch.setattr(arena_pool, "play_spans_in_pool", _spans_in_this_process(seen))
    spread = evaluate_batched("random", "greedy", pairs, seed=2, target=60, batch=batch,
                              workers=workers)
    covered = [pair for first, count in seen for pair in range(first, first + count)]
    assert covered == list(range(pairs))
    assert all(1 <= count <= batch for _, count in seen)
    assert len(seen) >= min(workers, pairs)
    one = evaluate_batched("random", "greedy", pairs, seed=2, target=60, batch=batch)
    assert spread.as_dict(timing=False) == one.as_dict(timing=False)


def test_a_resumed_run_with_workers_plays_only_the_missing_pairs(monkeypatch, tmp_path):
    """A log holding 3 of 4 pairs: the workers get pair 3 only (one pair, fewer than the
    workers), and the result is the one-sitting result."""
    from sevenrocks_env import arena_pool
    seen = []
    monkeypatch.setattr(arena_pool, "play_spans_in_pool", _spans_in_this_process(seen))
    log = tmp_path / "pairs.jsonl"
    evaluate_batched("random", "greedy", 3, seed=2, target=60, log=log)
    resumed = evaluate_batched("random", "greedy", 4, seed=2, target=60, workers=2, log=log)
    assert seen == [(3, 1)]
    whole = evaluate_batched("random", "greedy", 4, seed=2, target=60)
    assert resumed.as_dict(timing=False) == whole.as_dict(timing=False)
    assert [json.loads(line)["pair"] for line in log.read_text().splitlines()[1:]] == [0, 1, 2, 3]


def _untimed(outcome) -> dict:
    """A PairOutcome's fields but its think times."""
    return {k: v for k, v in vars(outcome).items() if k not in ("think_s", "think_cpu_s")}


def test_a_worker_plays_with_the_run_s_settings(monkeypatch):
    """The worker processes' own functions (run here): a pair, or a span of pairs, played with
    the run's seed, target and round limit gives what this process plays."""
    from sevenrocks_env import arena_pool
    from sevenrocks_env.batched_agents import batched_agent
    monkeypatch.setattr(arena_pool, "_WORKER", {})
    arena_pool._pair_init("greedy", "random", 5, 2000, 1, (None, None))  # cut after a round
    pair = arena_pool._play_pair(2)
    here = arena.play_pair([GreedyAgent(), GreedyAgent()], [RandomAgent(), RandomAgent()],
                           5, 2, 2000, 1)
    assert _untimed(pair) == _untimed(here) and pair.truncated == 2 and pair.rounds == 2
    monkeypatch.setattr(arena_pool, "_WORKER", {})
    monkeypatch.setattr(torch, "set_num_threads", lambda threads: None)  # (this process's)
    arena_pool._span_init("greedy", "random", 5, 2000, 1, 1, (None, None))
    span = arena_pool._play_span((2, 3))
    here = play_pairs_batched(batched_agent("greedy"), batched_agent("random"), 5, 2, 3, 2000, 1)
    assert [_untimed(o) for o in span] == [_untimed(o) for o in here]
    assert all(o.truncated == 2 and o.rounds == 2 for o in span)


def test_a_worker_refuses_a_checkpoint_replaced_since_the_run_began(monkeypatch, tmp_path):
    """A worker loads the agents' files seconds after the run's log named them (it starts and
    imports torch): a checkpoint replaced meanwhile (a training run saving latest.pt) played
    every pair of a log whose header named the other file."""
    import shutil

    from sevenrocks_env import arena_pool
    from sevenrocks_env.fingerprints import files_fingerprint
    from sevenrocks_env.policy import shipped_path
    path = tmp_path / "latest.pt"
    shutil.copyfile(shipped_path(), path)
    then = (files_fingerprint(f"ckpt:{path}"), None)
    monkeypatch.setattr(arena_pool, "_WORKER", {})
    monkeypatch.setattr(torch, "set_num_threads", lambda threads: None)  # (this process's)
    arena_pool._pair_init(f"ckpt:{path}", "greedy", 5, 250, 100, then)  # unchanged: plays
    arena_pool._span_init(f"ckpt:{path}", "greedy", 5, 250, 100, 1, then)
    v2 = Path(__file__).resolve().parents[1] / "checkpoints" / "previous" / "v2_oracle" \
        / "sevenrocks_ppo.pt"
    shutil.copyfile(v2, path)  # another policy under the same name
    for init, settings in ((arena_pool._pair_init, ()), (arena_pool._span_init, (1,))):
        with pytest.raises(ValueError, match="latest.pt: its file changed since the run began"):
            init(f"ckpt:{path}", "greedy", 5, 250, 100, *settings, then)


class _InlinePool:
    """A stand-in for ``ProcessPoolExecutor`` that runs each submitted chunk at once, here."""

    def __init__(self, workers, context, start, settings):
        initializer, initializer_settings = settings
        initializer(*initializer_settings)  # (not start_worker: it would ignore Ctrl-C here)

    def submit(self, function, *args):
        from concurrent.futures import Future
        future = Future()
        future.set_result(function(*args))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.mark.parametrize("items, workers, chunksize", [
    (range(-50, 0), 2, 1), (range(-50, 0), 3, 4), (range(-7, 0), 4, 3), (range(-1, 0), 2, 8)])
def test_the_pool_yields_every_item_once_in_order_however_many_chunks(monkeypatch, items,
                                                                      workers, chunksize):
    """Far more chunks than are kept in flight (CHUNKS_IN_FLIGHT a worker): each finished
    chunk lets the next one in, and every item's result comes back once, in order."""
    from sevenrocks_env import arena_pool
    monkeypatch.setattr(arena_pool, "ProcessPoolExecutor", _InlinePool)
    monkeypatch.setattr(arena_pool, "pool_context", lambda: None)
    got = list(arena_pool._in_pool(int, (), abs, items, workers, chunksize))
    assert got == [abs(item) for item in items]


def test_pairs_in_the_pool_are_every_pair_once_in_order(monkeypatch):
    """play_pairs_in_pool over more chunks than are in flight gives play_pair's outcome of
    each pair, in order (pairs 3 to 29 in 9 chunks, two workers)."""
    from sevenrocks_env import arena_pool
    monkeypatch.setattr(arena_pool, "ProcessPoolExecutor", _InlinePool)
    monkeypatch.setattr(arena_pool, "pool_context", lambda: None)
    monkeypatch.setattr(arena_pool, "_WORKER", {})
    pairs = range(3, 30)
    got = list(arena_pool.play_pairs_in_pool("greedy", "random", 9, pairs, 2000, 1, workers=2))
    duo_a, duo_b = [GreedyAgent(), GreedyAgent()], [RandomAgent(), RandomAgent()]
    expected = [arena.play_pair(duo_a, duo_b, 9, pair, 2000, 1) for pair in pairs]
    assert [_untimed(o) for o in got] == [_untimed(o) for o in expected]


def test_a_worker_that_ended_is_seen():
    """The pool's watch for a worker that died unseen by the executor (an exit code set)."""
    from sevenrocks_env.arena_pool import a_worker_died
    running, ended = SimpleNamespace(exitcode=None), SimpleNamespace(exitcode=-9)
    assert not a_worker_died(SimpleNamespace(_processes={1: running, 2: running}))
    assert a_worker_died(SimpleNamespace(_processes={1: running, 2: ended}))
    assert not a_worker_died(SimpleNamespace(_processes=None))  # (shut down: none to watch)


@pytest.mark.parametrize("batched", [False, True])
def test_one_process_checks_the_files_its_agents_were_built_from(monkeypatch, batched):
    """With --workers 1 the agents that play are built after the run's fingerprints (the log
    header's) were taken: a file replaced between the two is refused, as in a worker."""
    from sevenrocks_env import fingerprints
    from sevenrocks_env.arena_batched import evaluate_batched
    monkeypatch.setattr(fingerprints, "run_fingerprints", lambda agents: ("then", None))
    play = evaluate_batched if batched else arena.evaluate
    with pytest.raises(ValueError, match="ckpt:shipped: its file changed since the run began"):
        play("ckpt:shipped", "greedy", 2, seed=1)
