"""Arena: duplicate pairing, statistics, determinism across workers, CLI errors."""

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import arena, rules
from sevenrocks_env.agents import GreedyAgent, RandomAgent, make_agent
from sevenrocks_env.arena_pool import WorkerDied
from sevenrocks_env.arena_report import centre_text, rating_text
from sevenrocks_env.ratings import (ELO, _components, bradley_terry, fit_bradley_terry,
                                    mean_interval, t_quantile_975, wilson_interval)


def test_wilson_interval_known_cases():
    lo, hi = wilson_interval(0.5, 100)  # textbook: 50/100 -> [0.4038, 0.5962]
    assert lo == pytest.approx(0.40383, abs=1e-4) and hi == pytest.approx(0.59617, abs=1e-4)
    lo, hi = wilson_interval(0.0, 10)   # 0/10 -> [0, 0.2775]
    assert lo == 0.0 and hi == pytest.approx(0.27753, abs=1e-4)
    lo, hi = wilson_interval(0.8, 25)   # 20/25 -> [0.6087, 0.9114]
    assert lo == pytest.approx(0.6087, abs=1e-3) and hi == pytest.approx(0.9114, abs=1e-3)
    assert wilson_interval(0.5, 0) == (0.0, 1.0)  # no trials: nothing is known


def test_bradley_terry_stderr_is_the_inverse_fisher_information_in_elo_points():
    """Two agents, 3 even pairs plus the prior's drawn pair: p = 1/2, the information of the
    rating difference is 4 * 1/4 = 1, so each centred rating has variance 1/4: stderr ELO / 2."""
    out = bradley_terry(["a", "b"], {(0, 1): (1.5, 3)})
    assert [r["rating"] for r in out] == pytest.approx([0.0, 0.0], abs=1e-9)
    assert [r["stderr"] for r in out] == pytest.approx([ELO / 2, ELO / 2])


def test_ratings_are_on_the_elo_scale():
    """Two agents, A scoring 60 of 100 pairs, plus the prior's drawn pair: p = 60.5 / 101, and
    on the Elo scale (odds of 10 to 1 are 400 points) the gap is 400 log10(p / (1 - p))."""
    out = bradley_terry(["a", "b"], {(0, 1): (60.0, 100)})
    gap = out[0]["rating"] - out[1]["rating"]
    assert gap == pytest.approx(69.72, abs=0.01)  # = 400 * log10(60.5 / 40.5)
    assert out[0]["rating"] == pytest.approx(-out[1]["rating"])  # centred
    # the gap's variance is 1 / (101 p (1 - p)) in logits; each centred rating has a quarter
    assert out[0]["stderr"] == pytest.approx(400 / np.log(10) / 2 / np.sqrt(60.5 * 40.5 / 101))


@pytest.mark.parametrize("results", [
    {(0, 1): (300.0, 100)}, {(0, 1): (float("nan"), 100)}, {(0, 1): (-1, 100)},
    {(0, 1): (1, 0)}, {(0, 1): (1, 2.0)}, {(0, 0): (1, 2)}, {(0, 2): (1, 2)},
    {(0, 1): (True, 2)}, {(0, 1): (1, 2, 3)},
])
def test_bradley_terry_refuses_results_no_arena_gives(results):
    """A saved win rate of 3 fitted a rating of 1.6e15 with no error; NaN was a LinAlgError."""
    with pytest.raises(ValueError, match="Bradley-Terry: result"):
        bradley_terry(["a", "b"], results)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8).flatmap(lambda k: st.tuples(st.just(k), st.sets(st.tuples(
    st.integers(0, k - 1), st.integers(0, k - 1))))))
def test_groups_are_the_agents_that_reach_each_other_by_wins(graph):
    """``_components``: two agents share a group exactly when each reaches the other through
    wins (checked by a search from every agent), groups numbered 0, 1, ... by first agent."""
    k, edges = graph
    beat = {i: {j for a, j in edges if a == i and j != i} for i in range(k)}
    reach = []
    for start in range(k):
        seen, todo = {start}, [start]
        while todo:
            for nxt in beat[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        reach.append(seen)
    component = _components(k, beat)
    for i in range(k):
        for j in range(k):
            assert (component[i] == component[j]) == (j in reach[i] and i in reach[j])
    assert list(dict.fromkeys(component)) == list(range(max(component) + 1))


def test_bradley_terry_orders_and_centres():
    names = ["weak", "mid", "strong"]
    flat = bradley_terry(names, {(0, 1): (50, 100), (0, 2): (50, 100), (1, 2): (50, 100)})
    assert all(abs(r["rating"]) < 1e-6 for r in flat)
    ratings = bradley_terry(names, {(0, 1): (25, 100), (0, 2): (10, 100), (1, 2): (25, 100)})
    values = [r["rating"] for r in ratings]
    assert values[0] < values[1] < values[2] and abs(sum(values)) < 1e-6
    assert all(r["stderr"] > 0 for r in ratings)
    # an unbeaten agent still gets a finite rating (the prior)
    assert all(abs(r["rating"]) < 2000 for r in bradley_terry(names[:2], {(0, 1): (0, 50)}))
    # agents that never met, directly or through others, cannot be rated against each other
    with pytest.raises(ValueError, match="do not connect weak with strong"):
        bradley_terry(names, {(0, 1): (0, 50)})
    with pytest.raises(ValueError, match="do not connect a with c, d"):
        bradley_terry(list("abcd"), {(0, 1): (8, 10), (2, 3): (8, 10)})
    with pytest.raises(ValueError, match="no agents to rate"):  # a ZeroDivisionError
        bradley_terry([], {})
    assert [r["rating"] for r in bradley_terry(["alone"], {})] == [0.0]


#: A ladder-like table: "floor" lost every pair it played, against "a" and "b" only.
LADDER = (["floor", "a", "b", "c"],
          {(1, 0): (80, 80), (2, 0): (80, 80), (2, 1): (120, 200), (3, 1): (130, 200),
           (3, 2): (110, 200)})


def test_a_one_sided_agent_is_marked_and_left_out_of_the_centring():
    """Its rating is the prior's (it lost every pair): it must not move the others' ratings."""
    names, results = LADDER
    fitted = fit_bradley_terry(names, results)
    assert fitted.one_sided == ["lost every pair", None, None, None]
    assert fitted.rating[1:].mean() == pytest.approx(0.0, abs=1e-9)
    weaker = fit_bradley_terry(names, results, prior_pairs=0.1)  # the floor sinks, the rest stay
    assert weaker.rating[0] < fitted.rating[0] - 200
    assert weaker.rating[1:] == pytest.approx(fitted.rating[1:], abs=3)
    unbeaten = fit_bradley_terry(["x", "y"], {(0, 1): (50, 50)}).one_sided
    assert unbeaten == ["won every pair", "lost every pair"]


def test_a_group_that_never_scored_against_another_is_marked_as_the_prior_s():
    """Ford's condition: r1 and r2 split pairs between them but lost every pair to g and h, so
    the gap between {g, h} and {r1, r2} is the prior's (it grew with more pairs and nobody was
    marked).  Within each group the gap is measured."""
    names = ["r1", "r2", "g", "h"]
    for pairs in (10, 40):
        results = {(0, 1): (pairs / 2, pairs), (2, 0): (pairs, pairs), (2, 1): (pairs, pairs),
                   (3, 0): (pairs, pairs), (3, 1): (pairs, pairs), (2, 3): (0.3 * pairs, pairs)}
        fitted = fit_bradley_terry(names, results)
        assert fitted.one_sided == ["lost every pair against the other groups"] * 2 + [
            "won every pair against the other groups"] * 2  # two groups of two: no measured one
        assert fitted.group[0] == fitted.group[1] != fitted.group[2] == fitted.group[3]
        assert fitted.measured(0, 1) and fitted.measured(2, 3) and not fitted.measured(1, 2)
        assert fitted.rating.mean() == pytest.approx(0.0, abs=1e-9)  # centred on both groups
        assert centre_text(fitted.rows()).startswith("0 = the mean of the largest groups")
    # two tied groups and a lone agent below them: centred on the two groups, and said so
    tied = fit_bradley_terry(["a", "b", "c", "d", "e"], {
        (0, 1): (5, 10), (2, 3): (5, 10), (0, 2): (10, 10), (1, 3): (10, 10),
        (2, 4): (10, 10)})
    assert tied.rating[:4].mean() == pytest.approx(0.0, abs=1e-9)
    assert centre_text(tied.rows()).startswith("0 = the mean of the largest groups")
    # a larger measured group: the small one is marked, the centre is the measured group's
    names5 = ["r1", "r2", "a", "b", "c"]
    results5 = {(0, 1): (5, 10), (2, 0): (10, 10), (3, 1): (10, 10), (2, 3): (4, 10),
                (3, 4): (6, 10), (4, 2): (5, 10)}
    fitted5 = fit_bradley_terry(names5, results5)
    assert fitted5.one_sided == ["lost every pair against the other groups"] * 2 + [None] * 3
    assert fitted5.group == [1, 1, 0, 0, 0]
    assert fitted5.rating[2:].mean() == pytest.approx(0.0, abs=1e-9)
    # a middle agent: beaten by every pair of the top, beating every pair of the bottom
    chain = fit_bradley_terry(["top", "mid", "low"], {(0, 1): (10, 10), (1, 2): (10, 10)})
    assert chain.one_sided == ["won every pair", "between groups", "lost every pair"]
    assert chain.rating.mean() == pytest.approx(0.0, abs=1e-9)
    assert centre_text(chain.rows()) == "0 = the mean of all agents; every gap is the prior's"
    assert rating_text(chain.rows()[1]) == f"{chain.rating[1]:+.0f}"
    assert rating_text(chain.rows()[0]).startswith(">= ")
    # one group: nothing is marked, as before (LADDER's floor aside)
    assert fit_bradley_terry(["x", "y"], {(0, 1): (30, 50)}).one_sided == [None, None]
    # one agent alone: rated 0 (numpy's empty max ended the Newton loop with a ValueError)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no "did not converge" warning
        alone = fit_bradley_terry(["x"], {})
    assert alone.rating.tolist() == [0.0] and alone.one_sided == [None]


def test_rating_differences_have_the_gauge_free_standard_error():
    """``difference(i, j)``'s variance is ``c^T I^+ c`` for the contrast ``c = e_i - e_j`` and
    the Fisher information ``I`` at the fit, whatever the centring."""
    names, results = LADDER
    fitted = fit_bradley_terry(names, results)
    beta = fitted.rating / ELO
    games = np.zeros((4, 4))
    for (i, j), (_, trials) in results.items():
        games[i, j] = games[j, i] = trials + 1.0  # the prior's drawn pair
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    weight = games * p * (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    for i, j in ((1, 2), (3, 1), (0, 3)):
        contrast = np.zeros(4)
        contrast[i], contrast[j] = 1.0, -1.0
        expected = ELO * np.sqrt(contrast @ np.linalg.pinv(information) @ contrast)
        difference, stderr = fitted.difference(i, j)
        assert difference == pytest.approx(fitted.rating[i] - fitted.rating[j])
        assert stderr == pytest.approx(expected, rel=1e-6)


def test_newton_that_does_not_converge_says_so():
    names, results = LADDER
    with pytest.warns(RuntimeWarning, match="did not converge"):
        fit_bradley_terry(names, results, iterations=1)


def test_t_quantiles_and_the_mean_interval():
    for df, exact in ((3, 3.18245), (4, 2.77645), (5, 2.57058), (10, 2.22814), (19, 2.09302),
                      (30, 2.04227), (1000, 1.96234)):
        assert t_quantile_975(df) == pytest.approx(exact, abs=4e-3 if df == 3 else 1e-3)
    with pytest.raises(ValueError):
        t_quantile_975(2)
    lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])  # mean 3, sd 1.5811, t(4) 2.7764
    assert (lo + hi) / 2 == pytest.approx(3.0) and (hi - lo) / 2 == pytest.approx(1.9632, abs=2e-3)
    assert mean_interval([1.0, 2.0, 3.0]) is None  # too few pairs to say


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
    (["greedy", "random", "--pairs", "-3"], "pairs must be in [1, 1000000000]"),
    (["greedy"], "exactly two agents"),
    (["greedy", "random", "--workers", "0"], "workers"),
    (["greedy", "random", "--workers", "100000"], "workers must be an int in [1, 64]"),
    (["greedy", "random", "--seed", "-1"], "seed must be in [0, "),  # numpy's words before
    (["greedy", "random", "--target", "99999"], "target must be in [1, 5000]"),  # as --batched
    (["greedy", "random", "--max-rounds", "1001"], "max_rounds must be in [1, 1000]"),
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


def test_the_centre_is_the_measured_agents_mean_when_some_are_rated_by_the_prior():
    """LADDER's floor lost every pair, the others are measured: the ratings are centred on
    the agents the data rate against each other, and the label says so."""
    rows = fit_bradley_terry(*LADDER).rows()
    assert [bool(r["one_sided"]) for r in rows] == [True, False, False, False]
    assert centre_text(rows) == "0 = the mean of the agents the data rate against each other"


def test_four_values_are_enough_for_a_mean_interval():
    """Student's t needs 3 degrees of freedom (``t_quantile_975``): 4 pairs give an interval."""
    lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0])  # mean 2.5, sd 1.2910, t(3) 3.1824
    assert (lo + hi) / 2 == pytest.approx(2.5)
    assert (hi - lo) / 2 == pytest.approx(3.18245 * 1.29099 / 2, abs=5e-3)


def test_one_pair_has_a_wilson_interval_too():
    """n = 1 is a trial like any other: 1/1 -> [0.2065, 1], 0/1 -> [0, 0.7935] (not the
    no-trials answer [0, 1])."""
    lo, hi = wilson_interval(1.0, 1)
    assert lo == pytest.approx(0.20655, abs=1e-4) and hi == 1.0
    lo, hi = wilson_interval(0.0, 1)
    assert lo == 0.0 and hi == pytest.approx(0.79345, abs=1e-4)


def assert_likelihood_equations_hold(fitted, results, k: int, tolerance: float) -> None:
    """At the fitted ratings each agent's expected score equals its actual one (the prior's
    drawn pair per pairing included): the Bradley-Terry likelihood's equations."""
    wins, games = np.zeros((k, k)), np.zeros((k, k))
    for (i, j), (score, trials) in results.items():
        wins[i, j], wins[j, i] = score + 0.5, trials - score + 0.5
        games[i, j] = games[j, i] = trials + 1.0
    beta = fitted.rating / ELO
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    assert (wins - games * p).sum(axis=1) == pytest.approx(np.zeros(k), abs=tolerance)


def test_the_bradley_terry_fit_solves_the_likelihood_equations():
    """At the fit each agent's expected score (prior's drawn pairs included) equals its
    observed one: Newton's method runs until it gets there, not only near."""
    names, results = LADDER
    fitted = fit_bradley_terry(names, results)
    assert_likelihood_equations_hold(fitted, results, 4, 1e-7)


def test_a_fractional_score_is_scoring_against_an_agent():
    """A pair half won (a truncated match) counts as scoring: 0.5 of 3 pairs joins the two
    agents in one measured group, nobody rated by the prior alone."""
    fitted = fit_bradley_terry(["x", "y"], {(0, 1): (0.5, 3)})
    assert fitted.one_sided == [None, None] and fitted.group == [0, 0]
    assert fitted.measured(0, 1)


def test_without_a_measured_group_no_agent_is_in_group_0():
    """Group 0 is the measured one; when every group is one agent there is none, and the
    groups are numbered from 1 in the agents' order."""
    chain = fit_bradley_terry(["top", "mid", "low"], {(0, 1): (10, 10), (1, 2): (10, 10)})
    assert chain.group == [1, 2, 3]
    assert [r["group"] for r in chain.rows()] == [1, 2, 3]


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


def test_newton_does_not_run_away_on_intransitive_results():
    """A beat B 999.75 of 1000 pairs, B swept C, C beat D, D held A, A swept E: full Newton
    steps overshot, ``exp`` overflowed and E came out 4e14 Elo above A (who beat it in every
    pair) with a standard error of 26.  The damped steps reach the maximum: each agent's
    expected score equals its observed one, no warning, every rating finite."""
    results = {(0, 1): (999.75, 1000), (0, 3): (12.25, 20), (0, 4): (1000.0, 1000),
               (1, 2): (10000.0, 10000), (2, 3): (4999.75, 5000), (3, 4): (15.5, 20)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no "did not converge"
        fitted = fit_bradley_terry(list("ABCDE"), results)
    assert np.all(np.abs(fitted.rating) < 3000) and fitted.one_sided == [None] * 5
    assert fitted.rating[0] > fitted.rating[4]  # A swept E
    assert_likelihood_equations_hold(fitted, results, 5, 1e-6)
