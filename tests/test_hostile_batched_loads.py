"""Batched engine, bad input to deals, ``load``, ``load_state`` and ``BatchState.take``: a clear
error that changes nothing; loaded histories that would not validate give no record (issue 10).
Bad actions, seeds, devices and flags: test_hostile_batched.py."""

import re

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.record import validate
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.rules import deal as scalar_deal
from sevenrocks_env.tiles import tile_name, tiles_of

from batched_helpers import first_legal, snapshot


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_bad_deals_and_loads():
    venv = sevenrocks_v0.vector_env(num_envs=2)
    hands = torch.tensor([scalar_deal(0, 0)[0]] * 2)
    with pytest.raises(ValueError, match="env 1: .*disjoint"):
        bad = hands.clone()
        bad[1, 0] = bad[1, 1]
        venv.reset(seed=0, deals=(bad, torch.tensor([0, 1])))
    # the message says what is wrong, in tile names (it gave four 28-bit ints)
    first = tiles_of(int(hands[0, 1]))
    moved = hands.clone()
    moved[1, 0] |= 1 << first[0]
    moved[1, 1] &= ~(1 << first[0])
    for deal, openers, words in (
            (bad, [0, 1], re.escape("env 1: seats 0 and 1 both hold " + " ".join(
                tile_name(t) for t in first) + ";")),
            (moved, [0, 1], f"env 1: seat 0 holds 8 tiles .*{re.escape(tile_name(first[0]))}"
                            r".*\), not 7"),
            (torch.where(torch.arange(4) == 2, -5, hands), [0, 1], "seat 2's hand -5 is not"),
            (hands, [0, 4], "env 1: the opener is 4, not a seat 0-3")):
        with pytest.raises(ValueError, match=words):
            venv.reset(seed=0, deals=(deal, torch.tensor(openers)))
    with pytest.raises(TypeError, match="dtype"):
        venv.reset(seed=0, deals=(hands.int(), torch.tensor([0, 1])))
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="expected 2 matches"):
        venv.load([Match.new(0)])
    with pytest.raises(TypeError, match="load: matches must be a list"):
        venv.load(None)
    for flag in ("records", "validate"):
        with pytest.raises(TypeError, match=f"{flag} must be a bool"):
            sevenrocks_v0.vector_env(num_envs=2, **{flag: "no"})
    with pytest.raises(TypeError, match="rules.Match"):
        venv.load([Match.new(0), "match"])
    with pytest.raises(ValueError, match="target"):
        venv.load([Match.new(0), Match.new(1, target=100)])
    with pytest.raises(RuntimeError, match="records=True"):
        venv.pop_finished_records()
    with pytest.raises(ValueError, match="reward"):
        sevenrocks_v0.vector_env(num_envs=2, reward="score")
    with pytest.raises(ValueError, match="points_scale"):
        sevenrocks_v0.vector_env(num_envs=2, reward="win", points_scale=0.1)
    with pytest.raises(ValueError, match="num_envs"):
        sevenrocks_v0.vector_env(num_envs=0)
    for device in ("bogus", "mps", "meta", None, "cuda:99"):  # in words, not torch's AssertionError
        with pytest.raises(ValueError, match=r"device .*(Expected one of|runs on 'cpu' or "
                                             r"'cuda'|invalid combination|CUDA|CUDA device)"):
            sevenrocks_v0.vector_env(num_envs=2, device=device)


def test_a_loaded_history_that_does_not_replay_gives_no_record():
    """With records=True the history of a loaded match becomes its record: a history that is
    malformed or belongs to another match gives no record (it would not validate), and the
    matches with a good history still get theirs."""
    matches = [Match.new(3, target=60), Match.new(4, target=60)]
    for match in matches:
        for _ in range(9):
            apply_action(match, legal_actions(match)[0])
    swapped = matches[1].clone()
    swapped.history = matches[0].history
    malformed = matches[1].clone(keep_history=True)
    malformed.history[0].moves[2] = ("not", "a move")
    fresh_swapped = Match.new(4, target=60)  # both at 0-0: only the replay tells them apart
    fresh_swapped.history = Match.new(3, target=60).history
    for bad in (swapped, malformed, fresh_swapped):
        venv = sevenrocks_v0.vector_env(num_envs=2, records=True, target=60)
        venv.reset(seed=0)
        venv.load([matches[0], bad])
        records = []
        while int(venv.state.matches.min()) == 0:
            venv.step(first_legal(venv))
            records += venv.pop_finished_records()
        assert [env for env, _ in records if env == 1] == []
        assert [env for env, _ in records if env == 0] == [0]
        validate(next(record for env, record in records if env == 0))


def test_a_match_longer_than_a_record_may_be_keeps_no_record(monkeypatch):
    """max_rounds=None: a record holds at most record.MAX_ROUNDS rounds (here made 1), so a
    match that goes past them is not recorded rather than recorded invalid."""
    import sevenrocks_env.batched.records as records_module

    monkeypatch.setattr(records_module, "MAX_ROUNDS", 1)
    venv = sevenrocks_v0.vector_env(num_envs=16, target=60, max_rounds=None, records=True)
    venv.reset(seed=0)
    ended = 0
    for _ in range(300):
        _, terminated, _ = venv.step(first_legal(venv))
        ended += int(terminated.sum())
    records = venv.pop_finished_records()
    assert ended > len(records)  # most matches to 60 take more than one round
    assert all(len(record["rounds"]) == 1 for _, record in records)


def test_load_refuses_a_match_past_the_env_max_rounds_naming_it():
    """Accepted, then match(0) and every illegal-action message raised "round_index must be
    below max_rounds": the env held a state no match of its settings reaches."""
    venv = sevenrocks_v0.vector_env(num_envs=2, max_rounds=2)
    venv.reset(seed=0)
    late = Match.new(3, max_rounds=None)
    rng = __import__("random").Random(0)
    while late.round_index < 3:
        apply_action(late, rng.choice(legal_actions(late)))
    before = snapshot(venv)
    with pytest.raises(ValueError, match="load: match 1: .*round_index must be below max_rounds"):
        venv.load([Match.new(0), late])
    assert all(torch.equal(before[k], v) for k, v in snapshot(venv).items())


def test_load_state_checks_its_streams_before_changing_anything():
    venv = sevenrocks_v0.vector_env(num_envs=2)
    venv.reset(seed=5)
    state, streams = venv.state, venv.env_ids.clone()
    for bad, error in ((torch.tensor([0, 1], dtype=torch.int32), TypeError),
                       (torch.tensor([0, -1]), ValueError)):
        with pytest.raises(error):
            venv.load_state(venv.state, seed=99, deal_streams=bad)
        assert venv.settings.seed == 5 and venv.state is state
        assert torch.equal(venv.env_ids, streams)
    mine = torch.tensor([7, 7])
    venv.load_state(venv.state, seed=99, deal_streams=mine)
    mine[0] = 8  # the env keeps its own copy
    assert venv.env_ids.tolist() == [7, 7] and venv.settings.seed == 99


def test_load_refuses_a_finished_match_and_one_waiting_for_its_next_deal():
    """Neither has a seat on turn: the engine would step a seat that may not move."""
    rng = __import__("random").Random(1)
    won = Match.new(1)
    while not won.over:
        apply_action(won, rng.choice(legal_actions(won)))
    waiting = Match.from_deal(*scalar_deal(2, 0))  # seedless: a round's end awaits its deal
    while not waiting.awaiting_deal:
        apply_action(waiting, legal_actions(waiting)[0])
    venv = sevenrocks_v0.vector_env(num_envs=2)
    venv.reset(seed=0)
    before = snapshot(venv)
    for bad in (won, waiting):
        with pytest.raises(ValueError, match="load: match 1 is over or between rounds"):
            venv.load([Match.new(0), bad])
    assert all(torch.equal(before[k], v) for k, v in snapshot(venv).items())


def test_deal_streams_take_the_documented_range_0_to_2_pow_40():
    sevenrocks_v0.vector_env(num_envs=2, deal_streams=torch.tensor([0, 1 << 40])).reset(seed=0)
    with pytest.raises(ValueError, match=r"deal_streams must lie in \[0, 2\*\*40\]"):
        sevenrocks_v0.vector_env(num_envs=2, deal_streams=torch.tensor([0, (1 << 40) + 1]))


@pytest.mark.timeout(60)
def test_a_history_holding_a_negative_hand_gives_no_record_and_never_hangs():
    """``load`` with records (and the AEC env's ``game_record``) wrote the history as a record
    first: ``tiles_of(-1)`` never ends.  A field the engine reads before checking (``turn``)
    is named too (it was a bare TypeError from the rules)."""
    match = Match.new(3, target=60)
    for _ in range(5):
        apply_action(match, legal_actions(match)[0])
    match.history[0].hands[2] = -1
    env = sevenrocks_v0.vector_env(num_envs=1, target=60, records=True)
    env.reset(seed=0)
    env.load([match])
    aec = sevenrocks_v0.env(target=60)
    aec.reset(options={"match": match})
    with pytest.raises(ValueError, match="no game record"):
        aec.unwrapped.game_record()
    broken = Match.new(5, target=60)
    broken.turn = "a"
    with pytest.raises(ValueError, match="load: match 0: match state: turn must be a seat"):
        env.load([broken])
    with pytest.raises(ValueError, match="load: match 0: .* no attribute"):
        env.load([Match.__new__(Match)])


def test_load_state_refuses_fields_that_share_memory_between_envs():
    """An ``expand()``ed match counter was taken: one env's finished match moved every env's
    counter (other deals, silently); expanded hands failed inside torch at the first step."""
    env = sevenrocks_v0.vector_env(num_envs=4)
    env.reset(seed=0)
    before = snapshot(env)
    for field, shared in (("matches", lambda s: torch.zeros(1, dtype=torch.long).expand(4)),
                          ("hands", lambda s: s.hands[:1].expand(4, 4)),
                          ("hands", lambda s: s.hands.to_sparse())):
        state = env.state.take()
        setattr(state, field, shared(state))
        with pytest.raises(ValueError, match=f"field '{field}' must be a dense contiguous"):
            env.load_state(state)
        assert all(torch.equal(kept, getattr(env.state, name)) for name, kept in before.items())


@pytest.mark.parametrize("rows, error, words", [
    ([0, 1], TypeError, r"rows: expected a 1-D LongTensor .* or a BoolTensor\[4\], got list"),
    (torch.tensor([0.0, 1.0]), TypeError, "rows: expected dtype .*, got torch.float32"),
    (torch.tensor([0, 1], dtype=torch.int16), TypeError, "got torch.int16"),
    (torch.tensor([0, 1]).to_sparse(), TypeError, "rows: expected a dense tensor"),
    (torch.tensor(1), ValueError, r"rows: expected shape \[n\] .*, got \[\]"),
    (torch.tensor([[0, 1]]), ValueError, r"got \[1, 2\]"),
    (torch.tensor([True, False]), ValueError, r"\[4\] for a bool mask\), got \[2\]"),
    (torch.tensor([0, 4]), ValueError, r"rows: row 4 is not in \[0, 3\] \(the state holds 4"),
    (torch.tensor([2, -1]), ValueError, r"rows: row -1 is not in \[0, 3\]"),  # took the last
    (torch.tensor([2, -1], dtype=torch.int32), ValueError, r"rows: row -1 is not in \[0, 3\]"),
    (torch.tensor([0], device="meta"), ValueError, "rows: expected a tensor on device cpu"),
])
def test_take_refuses_rows_that_are_not_rows_of_the_state(rows, error, words):
    """``BatchState.take(rows)`` indexed with whatever it was given: a list or a 0-d tensor gave
    a state of the wrong shape, ``-1`` silently the last match, and on a GPU an index past the
    end is a device-side assert that ends the process's use of the device."""
    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=5)
    with pytest.raises(error, match=words):
        venv.state.take(rows)


def test_take_copies_the_rows_given_as_indices_with_repeats_or_as_a_mask():
    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=5)
    for rows, expected in ((torch.tensor([3, 3, 0], dtype=torch.int32), [3, 3, 0]),
                           (torch.tensor([True, False, False, True]), [0, 3]),
                           (torch.tensor([], dtype=torch.long), []), (None, [0, 1, 2, 3])):
        taken = venv.state.take(rows)
        assert torch.equal(taken.hands, venv.state.hands[expected])
        assert taken.hands.data_ptr() != venv.state.hands.data_ptr()  # a copy


@pytest.mark.parametrize("change, opener", [
    (lambda hands: hands.__setitem__(0, hands[1]), 0),                         # shared tiles
    (lambda hands: hands.__setitem__(slice(0, 2), [hands[0] | hands[1] & -hands[1],
                                                   hands[1] & hands[1] - 1]), 0),  # 8 and 6
    (lambda hands: hands.__setitem__(2, -5), 0),                               # not a set
    (lambda hands: None, 4),                                                   # no seat
])
def test_both_engines_name_a_bad_deal_in_the_same_words(change, opener):
    """The rules' constructors and the batched engine checked a deal apart, in other words
    ("0|1 is dealt twice" against "seats 0 and 1 both hold 0|1 ..."): one check says both."""
    hands = list(scalar_deal(0, 0)[0])
    change(hands)
    with pytest.raises(ValueError) as scalar:
        Match.from_deal(hands, opener)
    venv = sevenrocks_v0.vector_env(num_envs=2)
    good = list(scalar_deal(0, 0)[0])
    with pytest.raises(ValueError) as batched:
        venv.reset(seed=0, deals=(torch.tensor([good, hands]), torch.tensor([0, opener])))
    said = re.fullmatch(r"deal: (.+); a deal is four disjoint 7-tile hands covering all 28 "
                        r"tiles \(R1\) and an opener 0-3 \(R2\)", str(scalar.value))
    assert said, str(scalar.value)
    assert f"env 1: {said.group(1)}; a deal is four disjoint" in str(batched.value)


def test_a_deal_with_an_eight_tile_hand_overlapping_a_seven_tile_hand_is_refused():
    """Counts of at least 7 and a union of all 28 tiles are not a deal: a hand of 8 that takes
    a tile another seat of 7 also holds covers every tile too (29 tiles dealt, one twice)."""
    venv = sevenrocks_v0.vector_env(num_envs=2)
    venv.reset(seed=4)
    hands = torch.tensor([scalar_deal(0, 0)[0]] * 2)
    shared = tiles_of(int(hands[1, 1]))[0]
    hands[1, 0] |= 1 << shared  # seat 0: 8 tiles, one of them seat 1's (still 7)
    before = snapshot(venv)
    with pytest.raises(ValueError, match="env 1: "):
        venv.reset(seed=0, deals=(hands, torch.tensor([0, 1])))
    assert all(torch.equal(kept, getattr(venv.state, name)) for name, kept in before.items())
    assert venv.seed == 4


def test_load_refuses_more_matches_than_envs_and_changes_nothing():
    venv = sevenrocks_v0.vector_env(num_envs=2)
    venv.reset(seed=0)
    before = snapshot(venv)
    with pytest.raises(ValueError, match="load: expected 2 matches, got 3"):
        venv.load([Match.new(0), Match.new(1), Match.new(2)])
    assert all(torch.equal(kept, getattr(venv.state, name)) for name, kept in before.items())


@pytest.mark.parametrize("seed,error", [(-1, ValueError), (2 ** 63, ValueError),
                                        (1.5, TypeError), (True, TypeError)])
def test_load_state_refuses_a_bad_seed_and_changes_nothing(seed, error):
    """``load_state`` takes a seed as ``reset`` does: bounded and an int, checked before the
    state, the seed or the streams change."""
    venv = sevenrocks_v0.vector_env(num_envs=2)
    venv.reset(seed=5)
    state, streams = venv.state, venv._streams.clone()
    with pytest.raises(error, match="seed"):
        venv.load_state(state.take(), seed=seed)
    assert venv.state is state and venv.seed == 5 and torch.equal(venv._streams, streams)


def test_the_match_after_one_loaded_without_a_record_gets_its_record():
    """A loaded match whose history does not replay keeps no record; the env's next match
    (dealt by the env itself) is recorded again, under the same env index."""
    match = Match.new(4, target=60)
    for _ in range(9):
        apply_action(match, legal_actions(match)[0])
    bad = match.clone()
    bad.history = Match.new(3, target=60).history  # another match's history
    venv = sevenrocks_v0.vector_env(num_envs=2, records=True, target=60)
    venv.reset(seed=0)
    venv.load([bad, bad.clone()])
    records = []
    while int(venv.state.matches.min()) < 2:
        venv.step(first_legal(venv))
        records += venv.pop_finished_records()
    finished = venv.state.matches.tolist()
    for env in (0, 1):  # every match but the loaded one
        assert sum(1 for i, _ in records if i == env) == finished[env] - 1 >= 1
    for _, record in records:
        validate(record)


def test_a_device_torch_cannot_parse_is_named_in_our_words():
    """torch's text listed some 20 device types the engine refuses anyway, cut mid-word."""
    for device in ("CPU", None, "cuda:x", "gpu"):
        with pytest.raises(ValueError) as error:
            sevenrocks_v0.vector_env(num_envs=2, device=device)
        assert "sevenrocks runs on 'cpu' or 'cuda'" in str(error.value)
        assert "Expected one of" not in str(error.value)
