"""Chosen positions in the batched engine, each checked against the scalar rules (R3-R8).

Positions come from explicit deals (``reset(deals=...)``) or from scalar matches loaded mid-round
(``load``); :class:`Lockstep` then compares state, mask, observation and rewards with
``rules.Match`` after every step.
"""

import random
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import rules, sevenrocks_v0
from sevenrocks_env.batched import layout
from sevenrocks_env.batched.lockstep import Lockstep
from sevenrocks_env.rules import BLOCKED, DOMINO, Match, apply_action, deal, legal_actions
from sevenrocks_env import scoring
from sevenrocks_env.scoring import deduction
from sevenrocks_env.tiles import (EAST, KNOCK, TILE_IS_DOUBLE, TILE_LOW, encode_action, mask_of,
                                  parse_tile, tiles_of)

from positions import until_over
from rules_examples import EXAMPLES, WORKED, example_e_position, example_match, slot_index


pytestmark = pytest.mark.usefixtures("one_torch_thread")

seeds = st.integers(min_value=0, max_value=2**31 - 1)


def one_env(**kwargs):
    return sevenrocks_v0.vector_env(num_envs=1, **kwargs)


def act(action: int) -> torch.Tensor:
    return torch.tensor([action])


@pytest.mark.parametrize("name", ["A", "B", "C", "D"])
def test_worked_examples_through_the_batched_engine(name):
    """RULES.md's worked examples A-D, step by step, on the batched engine (explicit deal, seat
    i % 4 plays step i), in lockstep with the scalar engine: end sums, points, spinner, scores."""
    example = WORKED["examples"][name]
    dealt = example_match(EXAMPLES[name], steps=0)
    venv = one_env()
    venv.reset(seed=0, deals=(torch.tensor([dealt.hands]), torch.tensor([0])))
    lockstep = Lockstep(venv, [0])
    scores = [0, 0]
    for step, (tile, slot, end_sum, points) in enumerate(EXAMPLES[name], start=1):
        assert int(venv.current_seat[0]) == (step - 1) % 4
        lockstep.step(act(encode_action(parse_tile(tile), slot)))
        scores[(step - 1) % 2] += points
        assert int(venv.state.last_end_sum[0]) == end_sum, f"step {step}: end sum"
        assert venv.state.scores[0].tolist() == scores, f"step {step}: points"
        spinner = example["spinner_after_step"].get(str(step))
        if spinner is not None:
            assert int(venv.state.spinner[0]) == spinner, f"step {step}: spinner"
    assert scores == example["team_scores"]


def find_position(seed: int, wanted, tries: int = 200, target: int = 250):
    """A scalar match (with history) just before a move ``wanted(match, action, after)`` accepts,
    where ``after`` is a clone with the move applied; random play, from ``seed`` onwards."""
    for attempt in range(tries):
        match = Match.new(seed + attempt, target=5000)  # (no win in 3 rounds)
        rng = random.Random(seed + attempt)
        while not match.over and match.round_index < 3:
            for action in legal_actions(match):
                after = match.clone(keep_history=True)
                apply_action(after, action)
                if wanted(match, action, after):
                    match.target = target
                    return match, action
            apply_action(match, rng.choice(legal_actions(match)))
    raise AssertionError("no such position found")


@settings(max_examples=25, deadline=None)
@given(seeds)
def test_opening_double_is_the_spinner(seed):
    hands, _ = deal(seed, 0)
    opener = next(s for s in range(4) if any(TILE_IS_DOUBLE[t] for t in tiles_of(hands[s])))
    venv = one_env()
    venv.reset(seed=seed, deals=(torch.tensor([hands]), torch.tensor([opener])))
    lockstep = Lockstep(venv, [0])
    lockstep.check()
    double = max(t for t in tiles_of(hands[opener]) if TILE_IS_DOUBLE[t])
    lockstep.step(act(4 * double))
    number = TILE_LOW[double]
    state = venv.state
    assert state.spinner.tolist() == [number]                                 # R4
    assert state.ends[0].tolist() == [number, number, -1, -1]
    assert state.end_double[0].tolist() == [True, True, False, False]
    assert state.last_end_sum.tolist() == [2 * number]                       # Example B


@settings(max_examples=12, deadline=None)
@given(seeds)
def test_spinner_later_and_branches_open_only_when_both_sides_are_covered(seed):
    venv = one_env()
    venv.reset(seed=seed)
    lockstep = Lockstep(venv, [0])
    rng = random.Random(seed)
    for _ in range(120):
        legal = venv.action_mask[0].nonzero().squeeze(1).tolist()
        doubles = [a for a in legal if a != KNOCK and TILE_IS_DOUBLE[a >> 2]]
        placements = int(venv.state.placements[0])
        action = rng.choice(doubles if doubles and placements else legal)
        spinner_before = int(venv.state.spinner[0])
        lockstep.step(act(action))
        state = venv.state
        spinner, ends, double = int(state.spinner[0]), state.ends[0].tolist(), \
            state.end_double[0].tolist()
        if spinner_before < 0 <= spinner and placements and not state.placements[0] == 0:
            assert ends[action & 3] == spinner                   # attached by line A (R4)
        if spinner >= 0 and state.placements[0] > 0:
            exposed = any(double[s] and ends[s] == spinner for s in (0, 1))
            assert (ends[2] >= 0) == (not exposed)               # branches open iff covered
            assert (ends[3] >= 0) == (ends[2] >= 0)


def test_a_spinner_played_later_opens_its_branches():
    """R4 on four seeds: the first double played after the opening becomes the spinner, and its
    branches open once both of its sides are covered (the property test above checks more)."""
    for seed in range(4):
        match, action = find_position(
            seed, lambda m, a, after: m.spinner < 0 and m.placements > 0 and after.spinner >= 0)
        venv = one_env()
        venv.load([match])
        Lockstep(venv, [0]).step(act(action))
        after = Match.from_state(match.to_state())
        apply_action(after, action)
        assert venv.state.spinner[0] == after.spinner >= 0
        match, action = find_position(
            seed, lambda m, a, after: m.ends[2] < 0 <= after.ends[2] and after.round_index == 0)
        venv.load([match])
        Lockstep(venv, [0]).step(act(action))
        assert venv.state.ends[0, 2] == venv.state.spinner[0]


@pytest.mark.parametrize("seed", range(6))
def test_blocked_round_deducts_and_draws_the_next_opener(seed):
    match, action = find_position(
        seed * 50, lambda m, a, after: after.history[len(m.history) - 1].result == BLOCKED)
    venv = one_env(records=True)
    venv.load([match])
    lockstep = Lockstep(venv, [0])
    lockstep.step(act(action))                      # compares scores after deductions (R7)
    assert venv.state.placements.tolist() == [0]    # the next round is dealt
    # R2: after a block the next opener is drawn, with the hands of the env's next deal (it
    # was not checked: Lockstep takes the batched engine's opener, so "the next seat opens"
    # passed); a domino's finisher would open instead
    from sevenrocks_env.batched.deal import deal as batched_deal
    hands, drawn = batched_deal(venv.settings.seed, venv.env_ids, venv.state.matches,
                                venv.state.round_index)
    assert torch.equal(venv.state.hands, hands) and torch.equal(venv.state.opener, drawn)
    assert venv.state.turn.tolist() == drawn.tolist()


@pytest.mark.parametrize("blocking", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_win_at_target_on_the_last_tile_or_a_blocking_tile(seed, blocking):
    def wanted(m, a, after):
        log = after.history[len(m.history) - 1]
        points = log.moves[-1][3] if a != KNOCK else 0
        if not points:
            return False
        if blocking:
            return log.result == BLOCKED
        return log.result == DOMINO
    match, action = find_position(seed * 100, wanted)
    team = match.turn & 1
    trial = match.clone(keep_history=True)
    points = apply_action(trial, action)
    match.scores[team] = 250 - points               # this placement reaches the target (R8)
    venv = one_env(records=True)
    venv.load([match])
    lockstep = Lockstep(venv, [0])
    rewards, terminated, truncated = lockstep.step(act(action))
    assert terminated.tolist() == [True] and truncated.tolist() == [False]
    sign = 1.0 if team == 0 else -1.0
    assert rewards[0].tolist() == [sign, -sign, sign, -sign]
    assert venv.state.scores.tolist() == [[0, 0]] and venv.state.matches.tolist() == [1]
    assert venv.pop_finished_records() == []        # scores were edited: no replayable record


def test_win_from_zero_gives_a_record_with_no_deductions():
    venv = sevenrocks_v0.vector_env(num_envs=64, records=True, target=60)
    venv.reset(seed=5)
    generator = torch.Generator().manual_seed(5)
    records = []
    while len(records) < 20:
        keys = torch.rand(venv.action_mask.shape, generator=generator)
        venv.step(torch.where(venv.action_mask, keys, -1.0).argmax(1))
        records += venv.pop_finished_records()
    for _, record in records:
        last = record["rounds"][-1]
        assert last["result"] == "won" and last["deductions"] == [0, 0, 0, 0]     # R8
        assert max(record["scores"]) >= 60


@pytest.mark.parametrize("tiles,expected", [
    (["0|2"], 0), (["0|3"], 5), (["6|6"], 10), (["6|6", "0|1"], 15), (["6|6", "0|2"], 15),
    (["1|2"], 5), ([], 0)])
def test_deduction_rounding_examples(tiles, expected):
    hand = mask_of(parse_tile(t) for t in tiles)
    assert layout.deductions(torch.tensor([hand])).tolist() == [expected]      # R7


@settings(max_examples=50, deadline=None)
@given(st.sets(st.integers(0, 27), max_size=7))
def test_deductions_equal_the_scalar_rule(tiles):
    hand = mask_of(tiles)
    assert layout.deductions(torch.tensor([hand])).tolist() == [deduction(hand)]


def test_partners_are_rounded_separately():
    """Example E: seats 1 and 3 with 3 pips each cost team 1 5 + 5 = 10, also when a round
    really ends on the batched engine (the deductions of ``end_rounds``, R7)."""
    three = mask_of([parse_tile("0|3")])
    costs = layout.deductions(torch.tensor([three, three])).tolist()
    assert sum(costs) == 10
    match, last, scores = example_e_position()
    venv = one_env(reward="points")
    venv.reset(seed=0)
    venv.load([match])
    rewards, _, _ = Lockstep(venv, [0]).step(act(last))
    assert venv.match(0).scores == scores and venv.state.scores[0].tolist() == scores
    margin = (scores[0] - scores[1]) / 100  # reward="points": team 0's margin / 100
    assert rewards[0].tolist() == pytest.approx([margin, -margin, margin, -margin])


@pytest.mark.parametrize("data", WORKED["examples"]["B"]["alternatives"],
                         ids=lambda data: data["tile"])
def test_example_b_other_opening_double_through_the_batched_engine(data):
    """Example B's 0|0 opening (sum 0, no points): the spinner as 2|2 is, R4/R5."""
    step = [(data["tile"], slot_index(data["slot"]), data["end_sum"], data["points"])]
    dealt = example_match(step, steps=0)
    venv = one_env()
    venv.reset(seed=0, deals=(torch.tensor([dealt.hands]), torch.tensor([0])))
    tile = parse_tile(data["tile"])
    Lockstep(venv, [0]).step(act(encode_action(tile, step[0][1])))
    assert int(venv.state.last_end_sum[0]) == data["end_sum"]
    assert venv.state.scores[0].tolist() == [data["points"], 0]
    assert int(venv.state.spinner[0]) == TILE_LOW[tile]
    assert venv.state.ends[0].tolist() == [TILE_LOW[tile]] * 2 + [-1, -1]  # both sides open


def test_max_rounds_truncates_with_zero_win_reward_and_starts_a_fresh_match():
    venv = sevenrocks_v0.vector_env(num_envs=8, max_rounds=1, reward="win")
    venv.reset(seed=11)
    lockstep = Lockstep(venv, range(8))
    generator = torch.Generator().manual_seed(0)
    seen = 0
    for _ in range(200):
        keys = torch.rand(venv.action_mask.shape, generator=generator)
        rewards, terminated, truncated = lockstep.step(
            torch.where(venv.action_mask, keys, -1.0).argmax(1))
        for env in truncated.nonzero().squeeze(1).tolist():
            seen += 1
            assert not terminated[env] and rewards[env].tolist() == [0.0] * 4
            assert venv.state.round_index[env] == 0 and venv.state.scores[env].tolist() == [0, 0]
    assert seen > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_a_loaded_match_with_history_finishes_as_a_valid_record(seed):
    """load() continues the record of a match that started at 0-0 (its history) mid-round."""
    from sevenrocks_env.record import game_record, validate
    match = Match.new(seed, target=150)
    rng = random.Random(seed)
    for _ in range(80):  # a few rounds in, mid-round
        apply_action(match, rng.choice(legal_actions(match)))
    assert not match.over and match.placements > 0
    venv = sevenrocks_v0.vector_env(num_envs=2, target=150, records=True)
    venv.load([match, match.clone(keep_history=False)])
    generator = torch.Generator().manual_seed(seed)
    records = []
    while not any(env == 0 for env, _ in records):
        keys = torch.rand(venv.action_mask.shape, generator=generator)
        venv.step(torch.where(venv.action_mask, keys, -1.0).argmax(1))
        records += venv.pop_finished_records()
    record = next(r for env, r in records if env == 0)
    validate(record)
    assert record["rounds"][0] == game_record(match)["rounds"][0]   # the loaded history
    # env 1 was loaded without history: its first match has no record, later ones do
    finished_in_env1 = int(venv.state.matches[1])
    assert sum(env == 1 for env, _ in records) == max(finished_in_env1 - 1, 0)


def _row(values):
    return torch.tensor([list(values)], dtype=torch.long)


def test_place_tiles_a_later_double_is_not_a_second_spinner():
    """R4: "Only one spinner per round": example A step 3 lays 4|4 east after the spinner 1|1;
    ``place_tiles`` must give the same layout as the rules, spinner still 1."""
    match = example_match(EXAMPLES["A"], steps=2)
    assert match.spinner == 1
    tile = parse_tile("4|4")
    ends, double, started, spinner = layout.place_tiles(
        _row(match.ends), _row(match.end_double).bool(), _row(match.branch_started).bool(),
        torch.tensor([match.spinner]), torch.tensor([match.placements]),
        torch.tensor([tile]), torch.tensor([EAST]))
    rules.apply_action(match, encode_action(tile, EAST))
    assert int(spinner[0]) == match.spinner == 1
    assert ends[0].tolist() == list(match.ends)
    assert double[0].tolist() == [bool(d) for d in match.end_double]


def test_open_numbers_include_the_blank():
    """``open_numbers``: the 7-bit set of numbers open at some slot (what a knock shows a seat
    lacks, R6) -- an end showing 0 puts bit 0 in it; closed slots (-1) add nothing."""
    ends = torch.tensor([[0, 3, -1, -1], [0, 0, 0, 0], [6, 2, 6, 6], [-1, -1, -1, -1]])
    assert layout.open_numbers(ends).tolist() == [0b1001, 0b1, 0b1000100, 0]


def test_the_layout_functions_equal_the_scalar_rules_on_every_legal_placement():
    """The batched layout functions (R3-R6), compared directly with the scalar rules at every
    legal placement of random play (a mutation audit found several checked only through the
    batched heuristic): the layout after the tile, the counted ends and their sum, the tiles
    matching an open end, the open numbers and the legal moves."""
    rows = []
    for seed in range(40):
        match, rng = Match.new(seed, target=5000, max_rounds=3), random.Random(seed)
        for _ in until_over(match):
            legal = legal_actions(match)
            rows += [(list(match.ends), list(match.end_double), list(match.branch_started),
                      match.spinner, match.placements, match.hands[match.turn], action)
                     for action in legal if action != KNOCK]
            apply_action(match, rng.choice(legal))
    ends, double, started, spinner, placements, hands, actions = (
        torch.tensor(column) for column in zip(*rows))
    double, started = double.bool(), started.bool()
    after = layout.place_tiles(ends, double, started, spinner, placements, actions >> 2, actions & 3)
    counted = layout.counted_ends(ends, double, started)
    sums, matching = layout.end_sum(ends, double, started), layout.matching_tiles(ends)
    numbers, masks = layout.open_numbers(ends), layout.legal_mask(hands, ends, placements == 0)
    assert len(rows) > 5000
    for i, (end, dbl, start, spin, placed, hand, action) in enumerate(rows):
        played = SimpleNamespace(ends=list(end), end_double=list(dbl), branch_started=list(start),
                                 spinner=spin, placements=placed)
        rules.place_tile(played, action >> 2, action & 3)
        assert [after[0][i].tolist(), after[1][i].tolist(), after[2][i].tolist(),
                int(after[3][i])] == [played.ends, played.end_double, played.branch_started,
                                      played.spinner], (end, dbl, start, spin, action)
        assert counted[i].tolist() == list(scoring.counted_ends(end, dbl, start))
        assert int(sums[i]) == scoring.end_sum(end, dbl, start)
        assert int(matching[i]) == scoring.matching_tiles(end)
        assert int(numbers[i]) == sum(1 << n for n in set(end) if n >= 0)
        assert masks[i].nonzero().squeeze(1).tolist() == rules.legal_moves(hand, end, placed == 0)
