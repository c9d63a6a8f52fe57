"""Arena audit, continued from ``test_arena_audit.py`` (the pair, the batched arena, the
workers): the pair log refusing a line no two matches can give, saved results and their tables
and statistics, failures blamed on the agent, the command line and the ladder (each test here
failed on a plausible slip in the code)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sevenrocks_env import arena, rules
from sevenrocks_env.agents import RandomAgent
from sevenrocks_env.arena_log import PairLogError
from sevenrocks_env.ratings import wilson_interval

torch = pytest.importorskip("torch")
from sevenrocks_env.arena_batched import evaluate_batched  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ladder  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the pair log: a line no two matches can give ---------------------------------------------

def _cut_log(tmp_path, change: dict):
    """A pair log of two pairs whose matches were all cut after one round (max_rounds 1), its
    first pair changed by ``change``."""
    log = tmp_path / "l.jsonl"
    arena.evaluate("greedy", "random", 2, seed=3, target=2000, max_rounds=1, log=log)
    header, first, second = log.read_text().splitlines()
    data = json.loads(first)
    assert (data["truncated"], data["score"], data["rounds"]) == (2, 1.0, 2)
    data.update(change)
    log.write_text("\n".join([header, json.dumps(data), second]) + "\n")
    return log


@pytest.mark.parametrize("change, message", [
    # a pair is two matches: A scores at most 2 (a win rate over 1 otherwise) ...
    ({"score": 2.5, "truncated": 1}, r"score must be a number in \[0, 2\]"),
    # ... and at most two of them are cut off ...
    ({"truncated": 3, "score": 1.5}, r"truncated must be an int in \[0, 2\]"),
    # ... each of at most max_rounds rounds
    ({"rounds": 3, "decisions": [3, 3]}, r"rounds must be an int in \[0, 2\]"),
    # counts are JSON integers, not true/false or fractions
    ({"decisions": [True, 17]}, r"decisions must be an int"),
    ({"decisions": [17.5, 20]}, r"decisions must be an int"),
    # a round is won, lost or tied (1/2): A's share of rounds is a multiple of 1/2
    ({"round_wins_a": 1.25}, r"not a pair any match can give: round_wins_a is not a multiple"),
])
def test_a_logged_pair_two_matches_cannot_give_is_refused(tmp_path, change, message):
    """Values the other rules let through (each consistent with the rest of its line), caught
    by the bounds alone."""
    log = _cut_log(tmp_path, change)
    with pytest.raises(PairLogError, match=f":2: {message}"):
        arena.evaluate("greedy", "random", 2, seed=3, target=2000, max_rounds=1, log=log)


def test_the_cut_log_reads_back_unchanged(tmp_path):
    """(The log the test above changes reads back as it is.)"""
    log = _cut_log(tmp_path, {})
    again = arena.evaluate("greedy", "random", 2, seed=3, target=2000, max_rounds=1, log=log)
    assert again.truncated == 4 and again.win_rate == 0.5


def test_a_logged_pair_lost_twice_with_an_even_margin_is_refused(tmp_path):
    """A's two matches lost (none cut off), yet the scores even: a won match ends with its
    winner ahead (R8), so B's two wins leave A behind; every other rule holds here."""
    log = tmp_path / "l.jsonl"
    arena.evaluate("greedy", "random", 2, seed=3, log=log)
    header, first, second = log.read_text().splitlines()
    data = json.loads(first)
    assert data["rounds"] >= 2
    data.update(score=0.0, truncated=0, margin=0, points_a=data["points_b"], round_wins_a=0.0)
    log.write_text("\n".join([header, json.dumps(data), second]) + "\n")
    with pytest.raises(PairLogError, match=r":2: not a pair any match can give: score 0.0 with "
                                           r"margin 0 \(a won match ends"):
        arena.evaluate("greedy", "random", 2, seed=3, log=log)
    data.update(margin=-5, points_a=data["points_b"] - 5)  # behind by 5: a pair some match gives
    log.write_text("\n".join([header, json.dumps(data), second]) + "\n")
    assert arena.evaluate("greedy", "random", 2, seed=3, log=log).pairs == 2


# -- saved results, tables and the statistics ---------------------------------------------------

@pytest.fixture(scope="module")
def saved_result():
    """A real arena result (``--json``) of 6 pairs, as a dict."""
    return arena.evaluate("greedy", "random", 6, seed=5).as_dict()


@pytest.mark.parametrize("change, words", [
    # an interval off by a little (not the arena's: its Wilson interval over the pairs)
    (lambda r: {"ci95": [r["ci95"][0] - 0.005, r["ci95"][1]]}, "ci95 the Wilson interval"),
    (lambda r: {"ci95": [r["ci95"][0], r["ci95"][1] - 0.002]}, "ci95 the Wilson interval"),
    # as many matches as pairs (two a pair)
    (lambda r: {"matches": r["pairs"]}, "matches must be 2 x pairs"),
    (lambda r: {"matches": 2 * r["pairs"] + 1}, "matches must be 2 x pairs"),
    # one truncated match more than were played
    (lambda r: {"truncated": r["matches"] + 1}, "13 truncated matches of 12"),
    # a win rate over 1, with the interval Wilson's formula gave it over one pair (the function
    # now refuses p = 1.5)
    (lambda r: {"pairs": 1, "matches": 2, "win_rate": 1.5,
                "ci95": [0.5208722390605466, 1.0]}, "win_rate is missing or out of range"),
    # a margin no match gives (JSON's NaN, or beyond any target)
    (lambda r: {"mean_margin": float("nan")}, "mean_margin is missing or out of range"),
    (lambda r: {"mean_margin": 1e12}, "mean_margin is missing or out of range"),
    # an interval of three ends
    (lambda r: {"ci95": r["ci95"] + [r["ci95"][1]]}, "ci95 is missing or out of range"),
    # half a round a match over the round limit
    (lambda r: {"rounds_per_match": r["max_rounds"] + 0.5}, "over its max_rounds"),
])
def test_a_result_file_inconsistent_with_an_arena_run_is_refused(tmp_path, saved_result,
                                                                 change, words):
    from sevenrocks_env.arena_report import read_result
    path = tmp_path / "result.json"
    path.write_text(json.dumps(saved_result))
    assert read_result(path)["pairs"] == 6  # as written: read
    path.write_text(json.dumps(saved_result | change(saved_result)))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: ") as error:
        read_result(path)
    assert words in str(error.value)


def test_a_result_whose_every_match_was_truncated_is_read(tmp_path):
    """Every match cut at the round limit: as many truncated matches as matches, and exactly
    max_rounds rounds a match, is what the arena writes then."""
    from sevenrocks_env.arena_report import read_result
    path = tmp_path / "result.json"
    cut = arena.evaluate("greedy", "random", 2, seed=5, target=2000, max_rounds=1).as_dict()
    assert cut["truncated"] == cut["matches"] and cut["rounds_per_match"] == cut["max_rounds"]
    path.write_text(json.dumps(cut))
    assert read_result(path)["truncated"] == 4


def test_the_pair_table_shows_each_number_in_its_place(saved_result):
    """The two-column table: the interval low then high, A's points per round then B's, the
    mean margin A - B with its sign (A = greedy, ahead of random here)."""
    result = arena.ArenaResult(**{k: tuple(v) if isinstance(v, list) else v
                                  for k, v in saved_result.items()})
    rows = dict(line.split("  ", 1) for line in result.table().splitlines()[1:])
    rows = {key.strip(): value.strip() for key, value in rows.items()}
    lo, hi = result.ci95
    assert lo < hi
    assert rows["A match win rate"].startswith(
        f"{result.win_rate:.3f}  95% CI [{lo:.3f}, {hi:.3f}]")
    a, b = result.points_per_round
    assert a != b and rows["points per round A / B"] == f"{a:.1f} / {b:.1f}"
    assert result.mean_margin > 0
    assert rows["mean final margin (A - B)"].startswith(f"+{result.mean_margin:.1f}  95% CI")
    assert result.truncated != result.matches
    assert rows["truncated matches"] == f"{result.truncated}"
    assert rows["rounds per match"] == f"{result.rounds_per_match:.2f}"


@pytest.mark.parametrize("field", ["win_rate", "target", "seconds_per_decision", "agent_b"])
def test_a_result_without_a_required_field_is_refused(tmp_path, saved_result, field):
    """Every field of RESULT_FIELDS must be there (a missing target or time was read as
    nothing; a missing win rate was a KeyError)."""
    from sevenrocks_env.arena_report import read_result
    path = tmp_path / "result.json"
    path.write_text(json.dumps({k: v for k, v in saved_result.items() if k != field}))
    with pytest.raises(ValueError, match=f"{field} is missing or out of range"):
        read_result(path)


def test_the_progress_bar_is_tqdm_when_asked_for():
    tqdm = pytest.importorskip("tqdm")
    from sevenrocks_env.arena_report import progress_bar
    bar = progress_bar(3, "a vs b", True)
    try:
        assert isinstance(bar, tqdm.tqdm)
    finally:
        bar.close()
    assert not isinstance(progress_bar(3, "a vs b", False), tqdm.tqdm)


def test_wilson_intervals_stay_within_0_and_1():
    """An interval of a proportion lies in [0, 1] (a saved result's ci95 must be fractions):
    unclamped, rounding gave an upper bound of 1.0000000000000002 at a win rate of 1 over 16
    pairs (read_result then refused the arena's own file) and a lower one of -7e-18 at 0
    over 27; and it contains the rate (rounding alone gave a lower bound of 2.8e-17 at 0 over
    7)."""
    for n in range(1, 300):
        for p in (0.0, 0.25, 0.5, 1.0):
            lo, hi = wilson_interval(p, n)
            assert 0.0 <= lo <= p <= hi <= 1.0, (p, n, lo, hi)


def test_a_pairing_of_no_pairs_is_not_a_result():
    """``(score, 0 pairs)`` says nothing, and would connect two agents that never played."""
    from sevenrocks_env.ratings import bradley_terry
    with pytest.raises(ValueError, match="Bradley-Terry: result"):
        bradley_terry(["a", "b"], {(0, 1): (0, 0)})
    with pytest.raises(ValueError, match="Bradley-Terry: result"):
        bradley_terry(["a", "b", "c"], {(0, 1): (3, 5), (1, 2): (0.0, 0)})


# -- agents: failures blamed on them, batched draws keyed by the decision's coordinates ---------

@pytest.mark.parametrize("error", [RuntimeError("bad weights"), TypeError("no"),
                                   ZeroDivisionError("x"), KeyError("seat")])
def test_any_error_of_an_agent_is_an_agent_error_naming_it(error):
    """Not only a ValueError: whatever an agent raises stops the match as an AgentError naming
    it and its seat (the CLI prints it in one line; anything else was a traceback)."""
    from sevenrocks_env.driver import AgentError, MatchDriver

    class Broken:
        name = "broken"

        def act(self, observation, mask):
            raise error

    agents = [RandomAgent(seed=1), Broken(), RandomAgent(seed=2), RandomAgent(seed=3)]
    with pytest.raises(AgentError, match=f"agent 'broken' at seat 1 failed: "
                                         f"{type(error).__name__}") as info:
        MatchDriver(rules.Match.new(3), agents).run()
    assert info.value.__cause__ is error


def test_batched_search_worlds_are_drawn_per_decision():
    """``search_rngs``: one generator per decision, seeded by (seed, pair, game, move): two
    moves of one game draw different worlds, the same decision the same ones."""
    from sevenrocks_env.batched_agents import search_rngs
    context = {"seed": 3, "coordinate": torch.tensor([5, 5, 6, 5]),
               "moves": torch.tensor([0, 1, 0, 0])}
    draws = [rng.integers(2 ** 62) for rng in search_rngs(context, torch.arange(4))]
    assert draws[0] != draws[1] and draws[0] != draws[2] and draws[0] == draws[3]


def test_a_sampling_policy_s_batched_draws_depend_on_the_pair_game_and_move():
    """A sampling policy draws by a hash of (seed, pair, game, move): the same positions in other
    pairs, or at another move number, get other draws (near-uniform at temperature 100)."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched_agents import batched_agent
    side = batched_agent("sample:policy=shipped,temperature=100")
    env = VectorEnv(32, target=250)
    env.reset(seed=1)
    envs = torch.arange(32)

    def draws(coordinates, move=0):
        return side.actions(env, envs, {"seed": 3, "coordinate": coordinates,
                                        "moves": torch.full((32,), move)}).tolist()
    here = draws(envs)
    assert draws(envs.clone()) == here
    for elsewhere in (draws(envs + 1000), draws(envs, move=1)):
        assert sum(a != b for a, b in zip(here, elsewhere)) >= 8


def test_a_policy_search_with_sampled_rollouts_has_no_batched_version():
    """Sampled rollouts would depend on how decisions are grouped into batches."""
    from sevenrocks_env.batched_agents import batched_agent
    with pytest.raises(ValueError, match="rollout=argmax only"):
        batched_agent("search:policy=shipped,samples=2,rollout=sample")


# -- the command line ---------------------------------------------------------------------------

@pytest.mark.parametrize("engine", [[], ["--batched"]])
def test_the_cli_plays_at_the_target_and_round_limit_it_is_given(capsys, engine):
    from sevenrocks_env import arena_cli
    assert arena_cli.main(["random", "greedy", "--pairs", "2", "--seed", "4", "--target", "60",
                           "--max-rounds", "3", "--json", "--no-progress", *engine]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["target"], data["max_rounds"], data["seed"]) == (60, 3, 4)
    play = evaluate_batched if engine else arena.evaluate
    expected = play("random", "greedy", 2, seed=4, target=60, max_rounds=3)
    assert {k: v for k, v in data.items() if k in expected.as_dict(timing=False)} == \
        json.loads(json.dumps(expected.as_dict(timing=False)))


def test_the_cli_round_robin_deals_from_its_seed(capsys):
    from sevenrocks_env import arena_cli
    assert arena_cli.main(["--round-robin", "random", "greedy", "--pairs", "2", "--seed", "9",
                           "--target", "60", "--json", "--no-progress"]) == 0
    game = json.loads(capsys.readouterr().out)["games"][0]
    assert game["seed"] == 9
    expected = arena.evaluate("random", "greedy", 2, seed=9, target=60).as_dict(timing=False)
    assert {k: game[k] for k in expected} == json.loads(json.dumps(expected))


def test_the_cli_s_json_is_a_result_file_the_ladder_and_ship_read(capsys, tmp_path):
    """``sevenrocks arena ... --json > file``: what ``read_result`` (ladder, ship
    --extra-result) reads, timings included."""
    from sevenrocks_env import arena_cli
    from sevenrocks_env.arena_report import read_result
    assert arena_cli.main(["greedy=greedy", "random=random", "--pairs", "2", "--json",
                           "--no-progress"]) == 0
    path = tmp_path / "greedy__random.json"
    path.write_text(capsys.readouterr().out)
    data = read_result(path)
    assert data["pairs"] == 2 and len(data["seconds_per_decision"]) == 2
    assert data["cpu_seconds_per_decision"][0] > 0 and data["wall_s"] > 0


def test_a_training_script_s_evaluation_deals_from_its_eval_seed(capsys):
    """``--eval-seed`` (examples/): the arena results of a training script's evaluation are
    played from it."""
    from sevenrocks_env import arena_cli
    args = SimpleNamespace(eval_against=["random"], eval_pairs=2, eval_seed=7, json=None)
    results = arena_cli.report_evaluation("greedy", "trained", args, {})
    assert results["arena"]["random"]["seed"] == 7
    expected = arena.evaluate("greedy", "random", 2, seed=7).as_dict(timing=False)
    got = results["arena"]["random"]
    assert {k: got[k] for k in expected} == expected
    assert "trained vs random" in capsys.readouterr().out


# -- the ladder ---------------------------------------------------------------------------------

def test_a_process_pool_pairing_of_the_ladder_deals_from_the_ladder_s_seed(monkeypatch,
                                                                           tmp_path):
    """IS-MCTS pairings play in the unbatched arena: from the ladder's seed, under its round
    limit, and the file saved says so (so that the next run reuses it)."""
    played = []
    real = arena.evaluate

    def recording(spec_a, spec_b, pairs, **kwargs):  # (IS-MCTS itself is not needed here)
        played.append(kwargs)
        return real("bot=greedy", "random=random", pairs, **kwargs)
    monkeypatch.setattr(arena, "evaluate", recording)
    agents = {"bot": "openspiel:ismcts:sims=2", "random": "random"}
    data = ladder.play("bot", "random", 2, 5, tmp_path, reuse=False, agents=agents)
    assert played[0]["seed"] == 5 and played[0]["max_rounds"] == ladder.MAX_ROUNDS
    assert data["seed"] == 5
    assert json.loads((tmp_path / "bot__random.json").read_text())["seed"] == 5


def test_no_play_says_which_saved_pairing_was_played_from_another_seed(tmp_path, capsys):
    """``--no-play`` rates what is saved, and names a pairing saved with another --seed."""
    out = tmp_path / "ladder"
    out.mkdir()
    result = evaluate_batched("greedy=greedy", "random=random", 1, seed=99).as_dict()
    (out / "greedy__random.json").write_text(json.dumps(result))
    assert ladder.main(["--no-play", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "greedy__random.json: greedy against random, seed 99" in err
    assert "not this ladder's specs, --seed" in err
    result["seed"] = 31337  # the ladder's own: no word
    (out / "greedy__random.json").write_text(json.dumps(result))
    assert ladder.main(["--no-play", "--out", str(out)]) == 0
    assert "greedy__random.json" not in capsys.readouterr().err
