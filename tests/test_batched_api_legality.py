"""Batched engine API: the legal set.  The check of ``step`` (``validate=True`` against the
state, not the mask buffer; what ``validate=False`` still checks, on CUDA too in
test_batched_api.py; an illegal action that stops a step half way), and the cached legal set and
mask across resets and pickled copies.  Bad input in general: test_hostile_batched.py."""

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched import random_actions
from sevenrocks_env.rules import legal_actions
from sevenrocks_env.tiles import KNOCK

from batched_helpers import assert_out_of_range_refused, first_legal, snapshot


pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
