"""Arena: duplicate pairing, determinism across workers, results and tables, display names, CLI
errors (the statistics and ratings: ``test_arena_ratings.py``)."""

import json

import numpy as np
import pytest

from sevenrocks_env import arena, rules
from sevenrocks_env.agents import GreedyAgent, RandomAgent, make_agent
from sevenrocks_env.arena_pool import WorkerDied
from sevenrocks_env.ratings import wilson_interval


def test_duplicate_pairs_swap_teams_over_identical_deals(monkeypatch):
    """Both matches of a pair are played (the real matches' histories) over the same deals, round
    by round, with the teams' seats swapped; pairs use different deals."""
    calls = []
    real = arena.run_match

    def spy(agents, seed, target, max_rounds):
        match, result = real(agents, seed, target, max_rounds)
        calls.append(([a.name for a in agents], seed,
                      [(log.hands, log.opener) for log in match.history]))
        return match, result

    monkeypatch.setattr(arena, "run_match", spy)
    a, b = GreedyAgent(), RandomAgent()  # unlike players: the two matches' plays differ
    a.name, b.name = "A", "B"
    arena.evaluate(a, b, pairs=3, seed=10)
    assert len(calls) == 6
    later_rounds = 0
    for pair in range(3):
        first, second = calls[2 * pair], calls[2 * pair + 1]
        assert first[1] == second[1] == 10 + pair          # same deal seed
        common = min(len(first[2]), len(second[2]))
        assert common >= 2 and first[2][0] == second[2][0]  # the first deal and its opener
        # later rounds: the same hands (their opener is the last round's finisher, R2, which
        # the plays decide), whatever the scores and plays of the two matches
        assert [h for h, _ in first[2][:common]] == [h for h, _ in second[2][:common]]
        later_rounds += common - 1
        assert first[0] == ["A", "B", "A", "B"] and second[0] == ["B", "A", "B", "A"]
    assert later_rounds >= 6
    assert len({str(c[2][0]) for c in calls}) == 3  # each pair its own first deal


def test_duplicate_pair_of_identical_agents_is_even():
    # the same deterministic player on both sides: each pair is one win each, whatever the deals
    result = arena.evaluate("greedy", "greedy", pairs=4, seed=0)
    assert result.win_rate == 0.5 and result.mean_margin == 0


def test_results_identical_whatever_the_worker_count():
    one = arena.evaluate("random", "search:samples=2", pairs=3, seed=5, workers=1)
    two = arena.evaluate("random", "search:samples=2", pairs=3, seed=5, workers=2)
    assert one.as_dict(timing=False) == two.as_dict(timing=False)
    assert one.matches == 6 and one.decisions_per_s > 0
    other_seed = arena.evaluate("random", "search:samples=2", pairs=3, seed=6, workers=1)
    assert other_seed.as_dict(timing=False) != one.as_dict(timing=False)


def test_time_per_decision_is_reported_as_wall_and_cpu_time(fake_clocks):
    from sevenrocks_env import driver
    fake_clocks(driver, 0.5, 0.125)  # every decision: 0.5 s of wall time, 0.125 s of CPU
    result = arena.evaluate("random", "search:samples=2", pairs=2, seed=5)
    cpu = result.cpu_seconds_per_decision
    assert result.seconds_per_decision == (0.5, 0.5) and cpu == (0.125, 0.125)
    data = result.as_dict()
    assert data["cpu_seconds_per_decision"] == list(cpu)
    assert "cpu_seconds_per_decision" not in result.as_dict(timing=False)
    assert "CPU ms per decision A / B" in result.table()


def test_result_fields_table_and_json():
    result = arena.evaluate("heuristic", "random", pairs=2, seed=0)
    data = json.loads(json.dumps(result.as_dict()))
    assert data["pairs"] == 2 and data["matches"] == 4
    assert data["ci95"] == pytest.approx(list(wilson_interval(data["win_rate"], 2)))
    assert result.rounds_per_match >= 1 and "95% CI" in result.table()
    assert data["margin_ci95"] is None and "too few pairs" in result.table()
    assert "2 pairs, 4 matches, seed 0" in result.table()
    one = arena.evaluate("random", "greedy", pairs=1, seed=0, max_rounds=1).table()
    assert "1 pair, 2 matches, seed 0" in one and "cut at 1 round (a cut" in one


def test_the_mean_margin_has_a_t_interval_over_pairs():
    pairs, seed = 6, 11
    result = arena.evaluate("greedy", "random", pairs=pairs, seed=seed)
    margins = [arena.play_pair([GreedyAgent(), GreedyAgent()], [RandomAgent(), RandomAgent()],
                               seed, pair, rules.DEFAULT_TARGET, 100).margin / 2
               for pair in range(pairs)]
    assert result.mean_margin == pytest.approx(np.mean(margins))
    half = 2.5706 * np.std(margins, ddof=1) / np.sqrt(pairs)  # Student's t, 5 degrees of freedom
    assert result.margin_ci95 == pytest.approx((np.mean(margins) - half, np.mean(margins) + half),
                                               abs=1e-3 * half)
    assert json.loads(json.dumps(result.as_dict()))["margin_ci95"] == list(result.margin_ci95)


def test_play_match_reaches_the_target_and_logs_rounds():
    result = arena.play_match([GreedyAgent() for _ in range(4)], seed=3)
    assert result.winner in (0, 1) and result.scores[result.winner] >= rules.DEFAULT_TARGET
    assert sum(net[0] for net in result.round_net) == result.scores[0]
    assert len(result.round_net) == result.rounds


def test_play_match_takes_specs_as_evaluate_does():
    """``play_match(["greedy"] * 4, seed)`` failed inside the match (a str has no ``act``) and
    ``play_match("greedy", seed)`` counted the string's letters as agents."""
    specs = ["random", "greedy", "random", "heuristic"]
    made = [make_agent(spec, seed=arena.agent_seed(5, 0, 0, seat))
            for seat, spec in enumerate(specs)]
    assert arena.play_match(specs, seed=5).scores == arena.play_match(made, seed=5).scores
    for bad in ("greedy", 4):
        with pytest.raises(TypeError, match="4 agents or specs, one per seat"):
            arena.play_match(bad, seed=0)


def test_illegal_action_is_a_clear_error():
    class Cheater(RandomAgent):
        name = "cheater"

        def act(self, observation, action_mask):
            return 111  # 6|6 south: never legal at the opening

    with pytest.raises(arena.IllegalActionError, match="cheater.*illegal action 111"):
        arena.play_match([Cheater()] * 4, seed=0)


def test_agent_objects_need_one_worker():
    with pytest.raises(ValueError, match="workers=1"):
        arena.evaluate(GreedyAgent(), "random", pairs=1, workers=2)


def test_round_robin_table_and_ratings():
    result = arena.round_robin(["random", "greedy", "heuristic"], pairs=2, seed=0)
    assert len(result.games) == 3 and [r["agent"] for r in result.ratings] == result.agents
    assert "Bradley-Terry" in result.table()


@pytest.mark.parametrize("argv, words", [
    (["minimax", "greedy"], "unknown agent spec"),
    # the option named, as argparse names it (the words named the keyword, pairs)
    (["greedy", "random", "--pairs", "-3"], "argument --pairs: must be an int in [1, 1000000000]"),
    (["greedy"], "exactly two agents"),
    (["greedy", "random", "--workers", "0"], "workers"),
    (["greedy", "random", "--workers", "100000"], "workers must be an int in [1, 64]"),
    (["greedy", "random", "--seed", "-1"], "argument --seed: must be an int in [0, "),
    (["greedy", "random", "--target", "99999"], "argument --target: must be an int in [1, 5000]"),
    (["greedy", "random", "--max-rounds", "1001"],
     "argument --max-rounds: must be an int in [1, 1000]"),
    (["greedy", "ckpt:/no/such/file.pt"], ("no such file", "cannot read checkpoint")),
    (["greedy", "random", "--bogus"], "unrecognized"),
])
def test_cli_bad_input_exits_2(argv, words, capsys):
    assert arena.main(argv) == 2
    err = capsys.readouterr().err
    assert any(w in err for w in ((words,) if isinstance(words, str) else words)), err


def test_cli_json(capsys):
    assert arena.main(["greedy", "random", "--pairs", "2", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["agent_a"] == "greedy"


def test_agent_object_against_a_spec_string():
    from sevenrocks_env.agents import make_agent
    result = arena.evaluate(make_agent("greedy"), "random", pairs=2, seed=3)
    assert result.pairs == 2 and result.win_rate > 0.5


# -- display names: name=spec, short names in tables ------------------------------------------

@pytest.mark.parametrize("given, expected", [
    ("shipped=ckpt:checkpoints/shipped/sevenrocks_ppo.pt",
     ("shipped", "ckpt:checkpoints/shipped/sevenrocks_ppo.pt")),
    ("search:samples=16", ("search:samples=16", "search:samples=16")),  # a parameter, not a name
    (" mine = greedy ", ("mine", "greedy")),
    ("shipped+search=search:policy=shipped,samples=64",   # the ladder's name for it
     ("shipped+search", "search:policy=shipped,samples=64")),
    ("greedy", ("greedy", "greedy")),
])
def test_split_name(given, expected):
    assert arena.split_name(given) == expected


@pytest.mark.parametrize("given, message", [
    ("my agent=greedy", r"display name 'my agent' in 'my agent=greedy': a name is letters, "
                        r"digits and _\.\+- \(no blanks\)"),
    ("=greedy", "display name '' in"),
    ("mine=", "'mine=': no agent spec after mine="),
])
def test_a_name_the_arena_cannot_take_is_refused_in_words(given, message):
    with pytest.raises(ValueError, match=message):
        arena.split_name(given)


def test_named_spec_labels_the_result_and_the_table():
    result = arena.evaluate("mine=greedy", "random", pairs=1, seed=0)
    assert (result.agent_a, result.spec_a, result.agent_b, result.spec_b) == (
        "mine", "greedy", "random", "random")
    table = result.table()
    assert table.startswith("mine (A) vs random (B)") and "A = mine" in table and "greedy" in table


def test_short_names_are_short_recognisable_and_unique():
    from sevenrocks_env.arena_report import MAX_NAME, short_name, short_names
    assert short_name("ckpt:checkpoints/shipped/sevenrocks_ppo.pt") == "ckpt:sevenrocks_ppo"
    assert short_name("greedy") == "greedy"
    long = ["search:samples=1,rollout=greedy,win_bonus=50.0",
            "search:samples=1,rollout=greedy,win_bonus=49.0",
            "search:samples=2,rollout=greedy,win_bonus=50.0"]
    shorts = short_names(long)
    assert len(set(shorts)) == 3 and all(len(s) <= MAX_NAME for s in shorts)
    assert all(s.startswith("search:") for s in shorts)
    assert short_name("x" * MAX_NAME) == "x" * MAX_NAME  # exactly the width: kept whole
    assert short_name("abcdefghijklmnopqrstuvwxyz", 20) == "abcdefghi...stuvwxyz"  # cut inside


def test_a_round_robin_names_the_agent_given_twice():
    with pytest.raises(ValueError, match="agent 'random' is named twice"):
        arena.round_robin(["random", "greedy", "random"], pairs=1)
    with pytest.raises(ValueError, match="at least 2 agents"):
        arena.round_robin(["random"], pairs=1)
    with pytest.raises(TypeError, match="a list of agents or specs, got str 'greedy random'"):
        arena.round_robin("greedy random", pairs=1)  # was "agent 'r' is named twice"
    same = [GreedyAgent(), GreedyAgent()]  # two objects: no name=spec for them
    with pytest.raises(ValueError, match=r"'greedy' is named twice \(give each Agent object"):
        arena.round_robin(same, pairs=1)
    with pytest.raises(ValueError, match=r"twice \(name the spec \(name=spec\) or give the"):
        arena.round_robin([same[0], "greedy"], pairs=1)


def test_round_robin_table_mirrors_cells_and_sorts_ratings():
    from types import SimpleNamespace

    from sevenrocks_env.arena_report import round_robin_table
    game = SimpleNamespace(agent_a="alpha", agent_b="beta", win_rate=0.75, ci95=(0.6, 0.9))
    result = SimpleNamespace(agents=["alpha", "beta"], games=[game], specs=["alpha", "beta"],
                             ratings=[{"agent": "beta", "rating": -50.0, "stderr": 1.0},
                                      {"agent": "alpha", "rating": 50.0, "stderr": 1.0}])
    lines = round_robin_table(result).splitlines()
    row_a = next(line for line in lines if line.startswith("alpha"))
    row_b = next(line for line in lines if line.startswith("beta"))
    assert "0.750 [0.600,0.900]" in row_a
    assert "0.250 [0.100,0.400]" in row_b  # beta against alpha: 1 - 0.75, [1 - hi, 1 - lo]
    rated = [line.split()[0] for line in lines if "+-" in line and line.startswith("  ")]
    assert rated == ["alpha", "beta"]  # highest rating first
    result.ratings[0]["one_sided"] = "lost every pair"  # its rating is the prior's: marked
    beta = next(line for line in round_robin_table(result).splitlines()
                if line.startswith("  beta"))
    assert "<= -50.0" in beta and "set by the prior" in beta and "+-" not in beta


def test_round_robin_headers_never_run_together():
    specs = ["search:samples=1,rollout=greedy,win_bonus=50.0",
             "search:samples=1,rollout=greedy,win_bonus=49.0", "fast=greedy"]
    result = arena.round_robin(specs, pairs=1, seed=0)
    assert result.agents == specs[:2] + ["fast"] and result.specs == specs[:2] + ["greedy"]
    lines = result.table().splitlines()
    headers = lines[1].split()
    assert len(headers) == 3 and "fast" in headers  # one token per column: nothing ran together
    assert all(len(h) <= 20 for h in headers)
    legend = lines[lines.index("agents") + 1:]
    assert any(line.split() == ["fast", "greedy"] for line in legend)
    assert any(specs[0] in line for line in legend) and any(specs[1] in line for line in legend)
    data = json.loads(json.dumps(result.as_dict(timing=False)))
    assert data["specs"] == result.specs


def test_cli_named_specs(capsys):
    assert arena.main(["a=greedy", "b=random", "--pairs", "1", "--no-progress", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["agent_a"], data["spec_a"], data["agent_b"]) == ("a", "greedy", "b")


def test_numpy_integers_are_settings_too():
    """check_settings takes any integral number, as raw_env does (a np.int64 from a config
    array used to work and briefly did not)."""
    result = arena.evaluate("random", "greedy", np.int64(1), seed=np.int64(3),
                            max_rounds=np.int64(2))
    assert result.pairs == 1
    assert json.dumps(result.as_dict())  # a np.int64 seed was not JSON: the result, the log
    with pytest.raises(ValueError, match="pairs must be an int"):
        arena.evaluate("random", "greedy", np.True_)


def test_numpy_integer_settings_reach_the_log_and_the_batched_deals_as_ints(tmp_path):
    """A np.int64 seed passed the checks, then failed writing the pair log (not JSON) and
    hashing the batched arena's deals (OverflowError); as ints they give the plain run's result."""
    from sevenrocks_env.arena_batched import evaluate_batched
    log = tmp_path / "pairs.jsonl"
    numpy_run = arena.evaluate("greedy", "random", 2, seed=np.int64(3), log=log)
    assert numpy_run.win_rate == arena.evaluate("greedy", "random", 2, seed=3).win_rate
    assert arena.evaluate("greedy", "random", 2, seed=3, log=log).win_rate == numpy_run.win_rate
    batched = evaluate_batched("greedy", "random", np.int64(2), seed=np.int64(3),
                               batch=np.int64(1))
    assert batched.as_dict(timing=False) == \
        evaluate_batched("greedy", "random", 2, seed=3).as_dict(timing=False)


def test_a_round_robin_checks_every_spec_before_playing(monkeypatch):
    """A typo in the last agent was found after the other pairings had played."""
    played = []
    monkeypatch.setattr(arena, "evaluate", lambda *args, **kwargs: played.append(args))
    with pytest.raises(ValueError, match="nonsense"):
        arena.round_robin(["greedy", "random", "nonsense"], pairs=2)
    with pytest.raises(ValueError, match="pairs must be in"):
        arena.round_robin(["greedy", "random"], pairs=arena.MAX_PAIRS + 1)
    assert played == []


def test_a_pair_counts_tied_rounds_as_half_and_its_statistics_come_from_its_matches(
        monkeypatch):
    """Round wins count a tied round 1/2 (as the batched arena does); a truncated match is
    worth 1/2; margins and points are A's side of each match."""
    def fake_match(agents, seed, target, max_rounds):
        return arena.MatchResult(seed, None if seed % 2 else 0, (250, 100), 3,
                                 [(10, 10), (200, 0), (40, 90)], [5] * 4, [0.0] * 4)
    monkeypatch.setattr(arena, "play_match", fake_match)
    agents = [RandomAgent(), RandomAgent()]
    out = arena.play_pair(agents, agents, seed=4, pair=0, target=250, max_rounds=100)
    # A is team 0 in one match and team 1 in the other: rounds won 1/2 + 1 + 0, 1/2 + 0 + 1
    assert out.round_wins_a == 3.0 and out.rounds == 6
    assert out.score == 1.0  # seed 4: team 0 wins both matches, A is on it once
    assert out.margin == 0 and (out.points_a, out.points_b) == (350, 350)
    odd = arena.play_pair(agents, agents, seed=5, pair=0, target=250, max_rounds=100)
    assert odd.score == 1.0 and odd.truncated == 2  # two truncated matches: 1/2 each


def test_the_interval_is_wilson_over_pairs_not_matches():
    from sevenrocks_env.arena_batched import evaluate_batched
    for result in (arena.evaluate("greedy", "random", pairs=6, seed=3),
                   evaluate_batched("greedy", "random", pairs=6, seed=3)):
        assert result.ci95 == wilson_interval(result.win_rate, 6)
        assert result.ci95 != wilson_interval(result.win_rate, 12)


@pytest.mark.parametrize("stop, status, words", [
    (KeyboardInterrupt(), 130, "interrupted; the pairs finished so far are in"),
    (WorkerDied("an arena worker died"), 1, "an arena worker died; the pairs finished so far"),
    # an agent failing mid-match (here the driver's error for an illegal move) was a traceback
    (arena.IllegalActionError("agent 'bad' at seat 3 chose illegal action 112; legal: [77, 85]"),
     2,
     "error: agent 'bad' at seat 3 chose illegal action 112; legal: [77, 85]; the pairs "
     "finished before it are in"),
])
def test_cli_stopped_says_so_and_where_the_pairs_are(stop, status, words, monkeypatch, capsys,
                                                      tmp_path):
    from sevenrocks_env import arena_cli

    def stopped(*args, **kwargs):
        raise stop
    monkeypatch.setattr(arena_cli, "evaluate", stopped)
    log = tmp_path / "pairs.jsonl"
    assert arena_cli.main(["greedy", "random", "--log", str(log)]) == status
    assert words in capsys.readouterr().err
    assert arena_cli.main(["greedy", "random"]) == status  # no log: nothing to point to
    assert "the same command" not in capsys.readouterr().err


def test_a_saved_result_with_a_key_given_twice_is_refused(tmp_path):
    """A result file feeds the model card (ship --extra-result): the last of two win rates
    won without a word."""
    import json

    from sevenrocks_env.arena_report import read_result

    saved = json.dumps(arena.evaluate("greedy", "random", pairs=2, seed=5,
                                      progress=False).as_dict())
    path = tmp_path / "result.json"
    path.write_text(saved)
    assert read_result(path)["pairs"] == 2
    path.write_text('{"win_rate": 0.9, ' + saved[1:])
    with pytest.raises(ValueError, match="win_rate.* given twice"):
        read_result(path)


def test_round_win_rate_is_per_round_and_the_summary_divides_by_the_right_counts(monkeypatch):
    """One pair of two 3-round matches (the fake match of the tied-rounds test): A won 3 of 6
    rounds (a tied round 1/2), so the round win rate is 1/2, not 3 per match; points per round
    and rounds per match are per round and per match."""
    def fake_match(agents, seed, target, max_rounds):
        return arena.MatchResult(seed, 0, (250, 100), 3, [(10, 10), (200, 0), (40, 90)],
                                 [5] * 4, [0.0] * 4)
    monkeypatch.setattr(arena, "play_match", fake_match)
    result = arena.evaluate(RandomAgent(), GreedyAgent(), pairs=1, seed=4)
    assert result.round_win_rate == 0.5
    assert result.rounds_per_match == 3.0 and result.points_per_round == (350 / 6, 350 / 6)
    assert result.win_rate == 0.5 and result.mean_margin == 0.0


def test_settings_are_refused_just_past_their_bounds():
    from sevenrocks_env.arguments import MAX_BATCH, MAX_PAIRS
    from sevenrocks_env.dealing import MAX_SEED
    from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET
    top = {"seed": MAX_SEED, "max_rounds": MAX_ROUNDS, "target": MAX_TARGET,
           "pairs": MAX_PAIRS, "batch": MAX_BATCH}
    assert arena.check_settings(**top) == top
    for name, value in top.items():
        with pytest.raises(ValueError, match=f"{name} must be in"):
            arena.check_settings(**{name: value + 1})


