"""Batched engine API: determinism of the deal stream, explicit deals, records, CPU/GPU parity
(bad input: test_hostile_batched.py)."""

import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched.deal import deal, mix, mix_int
from sevenrocks_env.batched.records import RecordKeeper
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.state import FIELDS, STATE_BYTES
from sevenrocks_env.record import cut_off, game_record, validate
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import KNOCK
from sevenrocks_env.rules import deal as scalar_deal

from batched_helpers import assert_out_of_range_refused, first_legal, snapshot


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


def test_records_of_matches_cut_off_by_the_round_limit_say_so():
    """Records carry the env's ``max_rounds``: a match it truncated reads as cut off (it read
    as a match in progress), one with a winner does not, and none without a limit has it."""
    venv = sevenrocks_v0.vector_env(num_envs=32, records=True, target=60, max_rounds=2)
    venv.reset(seed=5)
    generator = torch.Generator().manual_seed(5)
    records, truncations = [], 0
    while len(records) < 64:
        _, terminated, truncated = venv.step(random_actions(venv.action_mask, generator))
        truncations += int(truncated.sum())
        records += [record for _, record in venv.pop_finished_records()]
    cut = [cut_off(record) for record in records]
    assert all(record["max_rounds"] == 2 for record in records)
    assert cut == [record["winner"] is None for record in records] and 0 < sum(cut) < len(cut)
    assert truncations == sum(cut)
    for record in records:
        validate(record)
    unlimited = sevenrocks_v0.vector_env(num_envs=2, records=True, target=30, max_rounds=None)
    unlimited.reset(seed=5)
    while not (done := unlimited.pop_finished_records()):
        unlimited.step(first_legal(unlimited))
    assert all("max_rounds" not in record for _, record in done)


def test_validate_false_skips_the_check_for_trusted_callers():
    venv = sevenrocks_v0.vector_env(num_envs=3, validate=False)
    venv.reset(seed=0)
    for _ in range(50):
        venv.step(first_legal(venv))
    assert venv.observation.shape == (3, 238) and venv.action_mask.shape == (3, 113)
    # validate=False skips only the legality check (the one synchronisation): a tensor of the
    # wrong shape would be broadcast over every env, and int32 is refused deeper in by torch
    before = snapshot(venv)
    for actions, error in ((first_legal(venv)[:1], ValueError), (first_legal(venv)[0], ValueError),
                           (first_legal(venv).int(), TypeError)):
        with pytest.raises(error, match="actions: expected"):
            venv.step(actions)
    for name, value in before.items():
        assert torch.equal(value, getattr(venv.state, name)), name
    # an action outside [0, 112] fails the first table lookup, before any change
    assert_out_of_range_refused(venv, env=1)


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


def test_a_zero_reward_is_positive_zero_for_every_seat():
    """Opponents' rewards are the team's times -1: a zero was -0.0 for seats 1 and 3."""
    venv = sevenrocks_v0.vector_env(num_envs=16)
    venv.reset(seed=0)
    zeros = 0
    for _ in range(20):
        rewards, _, _ = venv.step(first_legal(venv))
        zeros += int((rewards == 0).sum())
        assert not bool(torch.signbit(rewards[rewards == 0]).any())
    assert zeros > 0


def test_validate_false_an_illegal_action_that_stops_the_step_half_way_says_to_reset():
    """In range but illegal (6|6 on a branch that is closed): a table lookup fails after the
    hands and the layout changed.  It was a bare IndexError, and every later read another one;
    the env now says what happened and refuses use until reset() or load()."""
    venv = sevenrocks_v0.vector_env(num_envs=1, validate=False)
    venv.reset(seed=1)
    venv.step(first_legal(venv))
    closed_branch = torch.tensor([4 * 27 + 2])  # 6|6 north
    assert not bool(venv.action_mask[0, closed_branch])
    with pytest.raises(ValueError, match="illegal action was played with validate=False"):
        venv.step(closed_branch)
    for use in (lambda: venv.action_mask, lambda: venv.step(first_legal(venv))):
        with pytest.raises(RuntimeError, match="not one the rules reach; call reset"):
            use()
    venv.reset(seed=1)
    assert int(venv.action_mask[0].sum()) > 0


def test_reset_after_steps_in_inference_mode_and_keeps_unpopped_records():
    """Evaluating under torch.inference_mode() then resetting to train: reset builds a fresh
    state (writing in place into tensors made in inference mode is an error).  Matches that
    finished before the reset are still returned by pop_finished_records."""
    venv = sevenrocks_v0.vector_env(num_envs=8, target=30, records=True)
    venv.reset(seed=0)
    with torch.inference_mode():
        while len(venv._records.finished) < 2:
            venv.step(first_legal(venv))
    early = list(venv._records.finished)
    finished = len(early)
    with torch.inference_mode():  # and reset or load *inside* inference mode, then play outside
        venv.load([venv.match(i) for i in range(8)])
        venv.reset(seed=1)
    assert venv.seed == 1 and bool((venv.state.placements == 0).all())
    for _ in range(40):  # and it plays on outside inference mode, rounds ending included
        venv.step(first_legal(venv))
    records = venv.pop_finished_records()
    assert len(records) >= finished and records[:finished] == early  # the earlier ones first
    for _, record in records:
        validate(record)


def test_state_is_small_and_documented():
    venv = sevenrocks_v0.vector_env(num_envs=100)
    assert venv.state.nbytes() == 100 * STATE_BYTES == 100 * 216
    # + the deal streams (id and key) and the cached mask, then the packed legal set it is
    # unpacked from; the observation and its scratch tensors once it is first read
    assert venv.nbytes() == 100 * (216 + 16 + 120)
    venv.reset(seed=0)
    venv.action_mask
    assert venv.nbytes() == 100 * (216 + 16 + 120 + 16) == 100 * 368
    venv.observation
    assert venv.nbytes() == 100 * (368 + 952 + 1052) == 100 * 2372


def test_nbytes_counts_every_tensor_the_env_holds():
    """Every storage the env, its state and its observation writer hold (per-match tensors; the
    0-d target aside) is in ``nbytes()``: the deal streams and the packed legal set were left
    out (32 bytes a match)."""
    venv = sevenrocks_v0.vector_env(num_envs=50)
    venv.reset(seed=0)
    venv.action_mask
    venv.observation
    held = {}
    for owner, names in ((venv, vars(venv)), (venv.state, FIELDS),
                         (venv._observe, vars(venv._observe))):
        for name in names:
            value = getattr(owner, name)
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                held[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
    assert venv.nbytes() == sum(held.values()) == 50 * 2372


def test_a_reset_drops_the_cached_legal_set_mask_and_observation():
    """The packed legal set, the mask unpacked from it and the observation are cached per
    state: a reset after they were read must drop them as a step does (a stale cache is the
    old deal's, silently)."""
    venv, fresh = (sevenrocks_v0.vector_env(num_envs=6) for _ in range(2))
    venv.reset(seed=3)
    venv.random_actions(), venv.action_mask, venv.observation
    venv.reset(seed=4)
    fresh.reset(seed=4)
    drawn = venv.random_actions(torch.Generator().manual_seed(1))
    assert torch.equal(drawn, random_actions(fresh.action_mask, torch.Generator().manual_seed(1)))
    assert torch.equal(venv.action_mask, fresh.action_mask)
    assert torch.equal(venv.observation, fresh.observation)


def test_validate_checks_the_state_stepped_to_when_nothing_was_read_after_the_step():
    """A caller that picks its actions without the mask or ``random_actions`` (from
    ``match(env)``, say) is checked against the current legal set, not the one cached before
    the last step."""
    venv = sevenrocks_v0.vector_env(num_envs=6, validate=True)
    venv.reset(seed=8)
    venv.action_mask  # the legal set of the first state is cached
    for _ in range(40):
        venv.step(torch.tensor([max(legal_actions(venv.match(env))) for env in range(6)]))
    actions = torch.tensor([max(legal_actions(venv.match(env))) for env in range(6)])
    actions[2] = next(a for a in range(KNOCK + 1) if a not in legal_actions(venv.match(2)))
    with pytest.raises(ValueError, match="for env 2"):
        venv.step(actions)


def test_a_copy_pickled_with_its_legal_set_fresh_draws_and_validates_from_it():
    """Pickled (or deep-copied) right after the mask was read, the copy keeps the packed legal
    set with its freshness: it draws the original's actions and validates its steps."""
    import copy as copying
    import pickle

    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=6)
    venv.action_mask
    for copy in (pickle.loads(pickle.dumps(venv)), copying.deepcopy(venv)):
        drawn = copy.random_actions(torch.Generator().manual_seed(3))
        assert torch.equal(drawn, venv.random_actions(torch.Generator().manual_seed(3)))
        assert copy.nbytes() == venv.nbytes()
        copy.step(drawn)
        for env in range(4):
            legal = torch.nonzero(copy.action_mask[env]).squeeze(1).tolist()
            assert legal == sorted(legal_actions(copy.match(env)))


def test_record_move_log_grows_for_a_long_match_and_shrinks_after_it():
    """The records' move log keeps the rows of the oldest unfinished match: a long match grows
    it, and once that match is over the log shrinks back at its next rebuild (counted in
    ``nbytes``)."""
    keeper = RecordKeeper(1, 250, None)
    keeper.start([0], [[1, 2, 4, 8]], [0])
    none = torch.zeros(0, dtype=torch.long)
    one = torch.zeros(1, dtype=torch.long)

    def step(match_over: bool):
        rows = one if match_over else none
        keeper.append(one, SimpleNamespace(
            seat=one, end_sum=one, points=one, rows=rows, result=rows + 1,
            deductions=torch.zeros(len(rows), 4, dtype=torch.long),
            round_scores=torch.zeros(len(rows), 2, dtype=torch.long),
            match_over=rows == 0, winner=rows, new_hands=torch.ones(len(rows), 4, dtype=torch.long),
            new_opener=rows))

    for _ in range(1500):  # one long match
        step(False)
    assert keeper.nbytes() == len(keeper.log) * 4 * 2 and len(keeper.log) >= 1500
    for count in range(3000):  # it ends after 30 more moves; then matches of 30 moves
        step(count % 30 == 29)
    records = keeper.pop()
    assert [len(record["rounds"][0]["moves"]) for _, record in records] == [1530] + [30] * 99
    assert len(keeper.log) <= 128


def test_importing_sevenrocks_v0_does_not_import_the_batched_engine():
    code = ("import sys; from sevenrocks_env import sevenrocks_v0; "
            "print('sevenrocks_env.batched' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CPU/GPU parity needs a CUDA device")
def test_cpu_and_gpu_give_the_same_matches():
    cpu = sevenrocks_v0.vector_env(num_envs=256, records=True)
    gpu = sevenrocks_v0.vector_env(num_envs=256, device="cuda", records=True)
    cpu.reset(seed=9)
    gpu.reset(seed=9)
    generator = torch.Generator().manual_seed(0)
    for _ in range(1500):
        assert torch.equal(cpu.action_mask, gpu.action_mask.cpu())
        assert torch.equal(cpu.observation, gpu.observation.cpu())
        actions = random_actions(cpu.action_mask, generator)
        out_cpu = cpu.step(actions)
        out_gpu = gpu.step(actions.cuda())
        for a, b in zip(out_cpu, out_gpu):
            assert torch.equal(a, b.cpu())
        for name in FIELDS:
            assert torch.equal(getattr(cpu.state, name), getattr(gpu.state, name).cpu()), name
    assert cpu.pop_finished_records() == gpu.pop_finished_records()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_an_action_out_of_range_is_refused_without_validate():
    """On a GPU the failed table lookup would be a device-side assert, ending the process's use
    of the device: with validate=False the range is still checked there, state unchanged, and
    the env (and the device) go on working."""
    venv = sevenrocks_v0.vector_env(num_envs=8, device="cuda", validate=False)
    venv.reset(seed=0)
    assert_out_of_range_refused(venv, env=3)
    venv.step(first_legal(venv))
    assert int(venv.action_mask.sum()) > 0


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


def test_the_first_observation_may_be_read_in_inference_mode():
    # the observation's buffers are made on the first read: inside torch.inference_mode they
    # must still be normal tensors, or every later read outside it fails
    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=0)
    with torch.inference_mode():
        inside = venv.observation.clone()
    venv.step(first_legal(venv))
    assert venv.observation.shape == (4, 238) and not torch.equal(venv.observation, inside)


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


def test_an_action_past_either_end_is_illegal_even_where_the_end_action_is_legal():
    """113 is not a knock and -1 is not action 0: out-of-range actions are refused where the
    nearest in-range action (112, the knock; 0, 0|0 at the west end) is legal."""
    venv = sevenrocks_v0.vector_env(num_envs=64)
    venv.reset(seed=4)
    generator = torch.Generator().manual_seed(4)
    found = set()
    for _ in range(400):
        mask = venv.action_mask
        for action, wrong in ((KNOCK, KNOCK + 1), (0, -1)):
            rows = mask[:, action].nonzero().flatten()
            if len(rows) and wrong not in found:
                actions = first_legal(venv)
                actions[rows[0]] = wrong
                before = snapshot(venv)
                with pytest.raises(ValueError, match=f"illegal action {wrong} for env {rows[0]}"):
                    venv.step(actions)
                assert all(torch.equal(v, getattr(venv.state, k)) for k, v in before.items())
                found.add(wrong)
        if len(found) == 2:
            return
        venv.step(random_actions(venv.action_mask, generator))
    raise AssertionError(f"only found {found}")


def test_validate_checks_every_action_against_the_state_not_the_mask_buffer():
    """Each of the 113 actions passes ``validate=True`` exactly where the rules allow it, and a
    caller writing into the ``action_mask`` buffer (``mask[:, 112] = True``) changes what it
    sees, not what is legal: the check read that buffer, so the illegal knocks were played."""
    venv = sevenrocks_v0.vector_env(num_envs=32)
    venv.reset(seed=6)
    generator, refused = torch.Generator().manual_seed(6), 0
    for _ in range(5):
        for _ in range(7):
            venv.step(random_actions(venv.action_mask, generator))
        legal = venv.action_mask.clone()
        for env in range(0, 32, 5):
            assert legal[env].tolist() == [a in legal_actions(venv.match(env)) for a in range(113)]
        saved = venv.state.take()
        for action in range(KNOCK + 1):
            allowed = legal[:, action]
            actions = torch.where(allowed, action, first_legal(venv))
            venv.step(actions)  # legal in every env
            venv.load_state(saved.take(), seed=venv.seed, deal_streams=venv.env_ids)
            if not bool(allowed.all()):
                env = int((~allowed).nonzero()[0, 0])
                actions[env] = action
                with pytest.raises(ValueError, match=f"illegal action {action} .*for env {env}"):
                    venv.step(actions)  # the mask read: checked against its words
                venv.load_state(saved.take(), seed=venv.seed, deal_streams=venv.env_ids)
                with pytest.raises(ValueError, match=f"illegal action {action} .*for env {env}"):
                    venv.step(actions)  # no mask read since: the words made for the check
        venv.action_mask[:, KNOCK] = True  # a caller's write into the buffer
        knocks = torch.full((32,), KNOCK)
        if not bool(legal[:, KNOCK].all()):
            before = snapshot(venv)
            with pytest.raises(ValueError, match="illegal action 112 \\(knock\\)"):
                venv.step(knocks)
            assert all(torch.equal(v, getattr(venv.state, k)) for k, v in before.items())
            refused += 1
        venv.load_state(saved.take(), seed=venv.seed, deal_streams=venv.env_ids)  # a fresh mask
    assert refused == 5


def test_current_seat_is_a_copy_and_rewards_are_float32_whatever_the_default_dtype():
    """Writing into ``current_seat`` wrote into the live ``state.turn`` (the next step played
    another seat's move in every env, ``validate=True`` too); rewards followed torch's default
    float dtype (float64 after ``set_default_dtype``) where the docs promise FloatTensor."""
    venv = sevenrocks_v0.vector_env(num_envs=8, reward="shaped")
    venv.reset(seed=2)
    seats = venv.current_seat
    turn = venv.state.turn.clone()
    seats[:] = (seats + 1) % 4
    assert torch.equal(venv.state.turn, turn) and torch.equal(venv.current_seat, turn)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for _ in range(60):
            rewards, _, _ = venv.step(first_legal(venv))
            assert rewards.dtype == torch.float32
    finally:
        torch.set_default_dtype(default)


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


@pytest.mark.parametrize("fresh", [True, False])
def test_a_pickled_env_keeps_its_action_mask_in_step_with_its_state(fresh):
    """The mask is a bool view of a word buffer that each step rebuilds; pickle gives every
    tensor a storage of its own, so an unpickled env (a worker's copy: multiprocessing, Ray,
    cloudpickle) kept the mask it was pickled with forever, and illegal actions showed as legal
    (``deepcopy`` keeps the tie)."""
    import pickle

    venv = sevenrocks_v0.vector_env(num_envs=4, target=100)
    if not fresh:
        venv.reset(seed=5)
        venv.step(first_legal(venv))
    copy = pickle.loads(pickle.dumps(venv))
    if fresh:
        venv.reset(seed=5)
        copy.reset(seed=5)
    for _ in range(30):
        assert torch.equal(copy.action_mask, venv.action_mask)
        for env in range(4):
            legal = torch.nonzero(copy.action_mask[env]).squeeze(1).tolist()
            assert legal == sorted(legal_actions(copy.match(env)))
        actions = first_legal(venv)
        venv.step(actions)
        copy.step(actions.clone())


def test_nbytes_with_records_counts_the_move_log():
    """With ``records=True`` the move log (a CPU array the env keeps) is in ``nbytes()``."""
    plain = sevenrocks_v0.vector_env(num_envs=6)
    kept = sevenrocks_v0.vector_env(num_envs=6, records=True)
    for venv in (plain, kept):
        venv.reset(seed=0)
        for _ in range(3):
            venv.step(first_legal(venv))
    assert kept._records.log.nbytes > 0
    assert kept.nbytes() == plain.nbytes() + kept._records.log.nbytes


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
