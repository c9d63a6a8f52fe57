"""Batched engine API: the deal stream (seeded, pinned, explicit deals, deal streams, a
match's counter across loads and resets) and the documented save and restore.  The rest of the
API: test_batched_api.py and test_batched_api_legality.py."""

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched.deal import deal, mix, mix_int
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.state import FIELDS
from sevenrocks_env.record import game_record
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.rules import deal as scalar_deal

from batched_helpers import first_legal, snapshot


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_same_seed_same_trajectories_for_any_batch_size():
    small = sevenrocks_v0.vector_env(num_envs=3, target=100)
    large = sevenrocks_v0.vector_env(num_envs=11, target=100)
    small.reset(seed=42)
    large.reset(seed=42)
    for _ in range(400):  # several rounds and matches: the stream is (seed, env, match, round)
        for name in FIELDS:
            assert torch.equal(getattr(small.state, name), getattr(large.state, name)[:3]), name
        assert torch.equal(small.observation, large.observation[:3])
        small.step(first_legal(small))
        large.step(first_legal(large))
    assert int(small.state.matches.sum()) > 0


def test_deals_depend_only_on_their_coordinates():
    env_ids = torch.arange(10)
    hands, openers = deal(7, env_ids, torch.full((10,), 2), torch.full((10,), 3))
    one, opener = deal(7, torch.tensor([4]), torch.tensor([2]), torch.tensor([3]))
    assert torch.equal(hands[4:5], one) and torch.equal(openers[4:5], opener)
    assert (hands.sum(1) == (1 << 28) - 1).all()
    other, _ = deal(8, env_ids, torch.full((10,), 2), torch.full((10,), 3))
    assert not torch.equal(hands, other)
    _, many = deal(0, torch.arange(4000), torch.zeros(4000, dtype=torch.long),
                   torch.zeros(4000, dtype=torch.long))
    counts = torch.bincount(many, minlength=4)
    assert counts.min() > 850  # a fair draw (R2): every seat about 1000 times


def test_the_deal_stream_is_pinned():
    """Deals are part of a seed's meaning (records, duplicate evaluation): they never change
    silently.  Values from the engine as of 2026-12-01; the seed's own mix is done in Python."""
    hands, openers = deal((1 << 63) - 1, torch.tensor([0, 5, 1 << 40]), torch.tensor([0, 3, 7]),
                          torch.tensor([0, 1, 99]))
    assert hands.tolist() == [[9479202, 21300096, 167907341, 69748816],
                              [67272793, 38871300, 8408226, 153883136],
                              [201459747, 106836, 29102080, 37766792]]
    assert openers.tolist() == [0, 2, 3]
    words = [0, 1, -1, (1 << 63) - 1, -(1 << 63), 0x9E3779B97F4A7C15 - (1 << 64), 123456789]
    assert [mix_int(w) for w in words] == mix(torch.tensor(words)).tolist()


def test_explicit_deals_give_the_records_of_rules_from_deal():
    num = 4
    deals = [scalar_deal(100 + i, 0) for i in range(num)]
    hands = torch.tensor([h for h, _ in deals])
    openers = torch.tensor([o for _, o in deals])
    venv = sevenrocks_v0.vector_env(num_envs=num, records=True, target=120, max_rounds=100)
    venv.reset(seed=3, deals=(hands, openers))
    shadows = {i: Match.from_deal(deals[i][0], deals[i][1], target=120, max_rounds=100)
               for i in range(num)}
    compared = 0
    generator = torch.Generator().manual_seed(1)
    while shadows:
        actions = random_actions(venv.action_mask, generator)
        venv.step(actions)
        for env, match in list(shadows.items()):
            apply_action(match, int(actions[env]))
            if match.awaiting_deal:
                dealt = venv.match(env)
                match.start_round(dealt.hands, dealt.opener)
        for env, record in venv.pop_finished_records():
            if env in shadows:
                assert record == game_record(shadows.pop(env))
                compared += 1
    assert compared == num


def test_the_documented_save_and_restore_replays_exactly():
    """docs/vector.md: state.take() then load_state(..., seed=venv.seed, deal_streams=
    venv.env_ids) restores every env, later deals included, for an env built with its own
    streams; load() of match(i)s is the same position but not the same later deals."""
    venv = sevenrocks_v0.vector_env(num_envs=16, target=30, validate=False,
                                    deal_streams=torch.zeros(16, dtype=torch.long))
    venv.reset(seed=5)
    for _ in range(30):
        venv.step(random_actions(venv.action_mask, torch.Generator().manual_seed(1)))
    saved, matches = venv.state.take(), [venv.match(i) for i in range(16)]
    generator = torch.Generator().manual_seed(2)
    first, ended = [], 0
    for _ in range(200):
        actions = random_actions(venv.action_mask, generator)
        first.append(actions)
        ended += int(venv.step(actions)[1].sum())
    after = snapshot(venv)
    assert ended > 16  # matches ended: later deals came into play
    venv.load_state(saved.take(), seed=venv.seed, deal_streams=venv.env_ids)
    for actions in first:
        venv.step(actions)
    for name, value in after.items():
        assert torch.equal(value, getattr(venv.state, name)), name
    venv.load(matches)
    assert all(venv.match(i).hands == matches[i].hands for i in range(16))
    assert not torch.equal(venv.state.matches, saved.matches)  # the counters are the env's now


def test_deal_streams_give_envs_the_same_deals():
    """Envs on one deal stream are dealt identical rounds whatever they play (duplicate deals)."""
    import torch
    from sevenrocks_env import sevenrocks_v0
    streams = torch.tensor([0, 0, 5, 5])
    venv = sevenrocks_v0.vector_env(num_envs=4, deal_streams=streams, records=True, target=60)
    venv.reset(seed=11)
    plain = sevenrocks_v0.vector_env(num_envs=6, records=True, target=60)
    plain.reset(seed=11)
    assert torch.equal(venv.state.hands[0], venv.state.hands[1])
    assert torch.equal(venv.state.hands[2], plain.state.hands[5])
    assert not torch.equal(venv.state.hands[0], venv.state.hands[2])
    generator = torch.Generator().manual_seed(3)
    finished = {}
    for _ in range(3000):
        mask = venv.action_mask
        venv.step(torch.where(mask, torch.rand(mask.shape, generator=generator), -1.0).argmax(1))
        for env, record in venv.pop_finished_records():
            finished.setdefault(env, record)
        if len(finished) == 4:
            break
    assert len(finished) == 4
    for a, b in ((0, 1), (2, 3)):  # same deals, round by round, as far as both matches went
        rounds = zip(finished[a]["rounds"], finished[b]["rounds"])
        assert all(ra["hands"] == rb["hands"] for ra, rb in rounds)
    with pytest.raises(ValueError, match="deal_streams"):
        sevenrocks_v0.vector_env(num_envs=2, deal_streams=torch.tensor([0, -1]))
    with pytest.raises(ValueError, match="deal_streams"):
        sevenrocks_v0.vector_env(num_envs=2, deal_streams=torch.tensor([0, 1, 2]))


def test_a_new_match_is_dealt_and_opened_by_its_draw_even_after_a_domino():
    """R2: the dominoer opens the next round of the same match, but a new match (here every
    match is one round) is dealt and opened by the draw of its coordinates."""
    venv = sevenrocks_v0.vector_env(num_envs=64, target=5000, max_rounds=1, records=True)
    venv.reset(seed=3)
    generator = torch.Generator().manual_seed(0)
    dominoes = 0
    for _ in range(300):
        _, terminated, truncated = venv.step(random_actions(venv.action_mask, generator))
        ended = (terminated | truncated).nonzero().flatten()
        if len(ended):
            state = venv.state
            hands, opener = deal(3, ended, state.matches[ended], torch.zeros_like(ended))
            assert torch.equal(state.hands[ended], hands)
            assert torch.equal(state.opener[ended], opener)
            assert torch.equal(state.turn[ended], opener)
        dominoes += sum(record["rounds"][-1]["result"] == "domino"
                        for _, record in venv.pop_finished_records())
    assert dominoes > 20  # the case where the dominoer would otherwise open


def test_a_history_with_finished_rounds_replays_to_its_state():
    """R7: each seat's deduction comes off its own team (seats 0, 2: team 0; 1, 3: team 1), also
    when the history's starting scores are worked back from the state."""
    from sevenrocks_env.batched.records import replays_to_its_state
    for seed in range(50):
        match = Match.new(seed, target=1000)
        while len(match.history) < 2:
            apply_action(match, legal_actions(match)[0])
        deductions = match.history[0].deductions
        if deductions[1] != deductions[2]:
            break
    else:
        pytest.fail("no deal with different deductions for seats 1 and 2")
    assert replays_to_its_state(match)


def test_load_keeps_each_env_s_match_counter():
    """Later deals come from ``(seed, stream, matches, round)``: a load that reset the counter
    would deal an env's next matches again from its first ones."""
    venv = sevenrocks_v0.vector_env(num_envs=4, target=5, max_rounds=None)
    venv.reset(seed=3)
    generator = torch.Generator().manual_seed(3)
    while int(venv.state.matches.min()) == 0:
        venv.step(random_actions(venv.action_mask, generator))
    counts = venv.state.matches.clone()
    venv.load([venv.match(i) for i in range(4)])
    assert torch.equal(venv.state.matches, counts)


def test_a_reset_after_finished_matches_deals_as_a_fresh_env_does():
    """Deals depend on ``(seed, env, match, round)`` only, and a reset starts every env's match
    count again: an env reset after matches have ended replays a fresh env with that seed,
    its first deals and the deals of the matches after them."""
    used, fresh = (sevenrocks_v0.vector_env(num_envs=4, target=20) for _ in range(2))
    used.reset(seed=3)
    for _ in range(150):
        used.step(first_legal(used))
    assert int(used.state.matches.min()) > 0
    used.reset(seed=7)
    fresh.reset(seed=7)
    ended = 0
    for _ in range(150):
        actions = first_legal(fresh)
        ended += int(used.step(actions)[1].sum())
        fresh.step(actions)
        for name in FIELDS:
            assert torch.equal(getattr(used.state, name), getattr(fresh.state, name)), name
    assert ended > 0
