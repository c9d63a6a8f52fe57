"""Tests from a mutation audit of the policy network and its loader (``sevenrocks_env.policy``,
``policy_features``, ``policy_scorer``, ``policy_file``, ``masked_categorical``, the batched
policy player and ``training.networks``): each pins a behaviour that a small change of the code
left every other test passing -- the forward pass without a mask, the agent's own generator, the
documented bounds and defaults, the checks on an untrusted checkpoint's declared layout and
network, and the draws of a sampling player."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from sevenrocks_env.observation import action_mask, encode  # noqa: E402
from sevenrocks_env.policy import (  # noqa: E402
    CheckpointError, PolicyAgent, PolicyNet, generator_seed, load_policy, probe_positions,
    read_checkpoint)
from positions import random_state  # noqa: E402
from policy_files import save_policy, trained_looking  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def position(seed: int, moves: int) -> tuple[np.ndarray, np.ndarray]:
    match = random_state(seed, moves)
    return encode(match, match.turn), action_mask(match, match.turn)


# -- the network ----------------------------------------------------------------------------------

def test_a_forward_pass_without_a_mask_scores_every_placement():
    """``forward(obs)`` without a mask gives every placement its per-action term ("no mask:
    every placement"): the logits are those of a mask allowing all 113 actions.  The position
    has the south end showing 6, so the last placement (6|6 south, action 111) fits and has a
    term of its own."""
    from sevenrocks_env.observation import OFFSETS
    torch.manual_seed(0)
    net = trained_looking(PolicyNet([32], action_features=2))
    obs, _ = position(0, 16)
    south = obs[OFFSETS["slot_number"]].reshape(4, 7)[3]
    assert obs[OFFSETS["slot_open"]][3] == 1 and south[6] == 1
    obs = torch.from_numpy(obs).unsqueeze(0)
    with torch.no_grad():
        unmasked, _ = net(obs)
        everything, _ = net(obs, torch.ones(1, 113, dtype=torch.bool))
        head_only = net.policy_head(net.trunk(obs))
    assert unmasked[0, 111] != head_only[0, 111]          # the term is there to be left out
    torch.testing.assert_close(unmasked, everything, rtol=0, atol=0)


@pytest.mark.parametrize("network", [dict(action_features=0), dict(action_features=2),
                                     dict(action_features=3, action_scorer="mlp")],
                         ids=["plain", "bilinear", "mlp"])
def test_a_fresh_network_starts_near_the_uniform_policy(network):
    """PolicyNet's docstring: the policy head and the per-action term's last layer start near 0
    (gain 0.01), so the initial policy is near uniform over the legal actions (measured: every
    legal logit within 0.03 of 0 with the default widths)."""
    observations, masks = probe_positions()
    for seed in range(3):
        torch.manual_seed(seed)
        net = PolicyNet(**network).eval()
        with torch.no_grad():
            logits, _ = net(observations, masks)
        assert float(logits[masks].abs().max()) < 0.1, seed


def test_an_mlp_scorer_without_action_features_is_a_value_error_saying_so():
    with pytest.raises(ValueError, match="needs action features"):
        PolicyNet([16], action_features=0, action_scorer="mlp")


# -- the agent ------------------------------------------------------------------------------------

def test_generator_seeds_below_2_64_are_used_unchanged():
    """``generator_seed``: "seeds in that range are unchanged" -- an arena's seed times 4 goes
    past 2**63, and two such seeds must not draw alike."""
    for seed in (0, 7, 2 ** 63 - 1, 2 ** 63, 2 ** 63 + 5, 2 ** 64 - 1):
        assert generator_seed(seed) == seed
    assert generator_seed(2 ** 64 + 7) == 7
    agent = PolicyAgent(PolicyNet([8]), deterministic=False)
    agent.seed(2 ** 63 + 5)
    assert agent._generator.initial_seed() == 2 ** 63 + 5


def test_a_seeded_sampling_agent_draws_from_its_own_generator():
    """Seeded alike, two sampling agents play the same moves whatever torch's global generator
    does between their draws; seeded apart, they play other moves."""
    torch.manual_seed(1)
    net = trained_looking(PolicyNet([32], action_features=2))
    positions = [position(seed, 3 + seed % 15) for seed in range(40)]
    positions = [(o, m) for o, m in positions if m.sum() > 2]

    def moves(seed, global_seed):
        agent = PolicyAgent(net, deterministic=False, temperature=5.0)
        agent.seed(seed)
        torch.manual_seed(global_seed)
        return [agent.act(o, m) for o, m in positions]

    assert len(positions) > 15
    assert moves(3, 0) == moves(3, 1)
    assert moves(3, 0) != moves(4, 0)


def test_a_legal_logit_of_minus_infinity_is_an_error_not_a_move():
    """``act``: "the network's outputs for legal actions are not finite" -- a -inf logit among
    the legal actions is such an output (the distribution alone would quietly play another)."""
    obs, mask = position(3, 5)
    legal = np.flatnonzero(mask)
    assert len(legal) > 2

    class Broken(nn.Module):
        def forward(self, obs, mask):
            logits = torch.zeros(obs.shape[0], 113)
            logits[:, legal[0]] = -torch.inf
            return logits, torch.zeros(obs.shape[0])

    for deterministic in (True, False):
        with pytest.raises(RuntimeError, match="outputs for legal actions are not finite"):
            PolicyAgent(Broken(), deterministic=deterministic).act(obs, mask)


# -- action features ------------------------------------------------------------------------------

def test_the_match_target_is_read_back_exactly_from_the_observation():
    """Features 29-32 (version 3) read the target from ``target / 1000`` in float32: 251 is
    0.2509999871 there, so it must be rounded back, not truncated to 250 (any target up to
    ``MAX_TARGET`` is allowed).  Features 29 and 30 against the decoded view of the same
    observation."""
    from sevenrocks_env import rules
    from sevenrocks_env.observation import decode
    from sevenrocks_env.policy_features import FEATURE_NAMES, ActionFeatures
    from sevenrocks_env.tiles import KNOCK

    need = FEATURE_NAMES.index("our_need")
    checked = 0
    for target in (251, 253, 1009):
        for seed in range(6):
            match = random_state(seed, 9, target=target)
            placements = [a for a in rules.legal_actions(match) if a != KNOCK]
            if match.over or match.awaiting_deal or not placements:
                continue
            obs = encode(match, match.turn)
            view = decode(obs)
            assert view.target == target
            got = ActionFeatures(3)(torch.from_numpy(obs).unsqueeze(0),
                                    torch.zeros(len(placements), dtype=torch.long),
                                    torch.tensor(placements))
            ours, theirs = view.scores
            want = torch.tensor([(target - ours) / target, (target - theirs) / target])
            for row in got:
                torch.testing.assert_close(row[need:need + 2], want.float(), rtol=0, atol=1e-6)
            checked += 1
    assert checked >= 10


# -- reading a checkpoint -------------------------------------------------------------------------

def relocated(path, location: bytes):
    """Rewrite the ``torch.save`` archive at ``path`` so that its tensors say they were saved on
    ``location`` (``cuda:0``: a checkpoint written by a run on a GPU)."""
    import zipfile
    with zipfile.ZipFile(path) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            if name.endswith("/data.pkl"):
                assert data.count(b"X\x03\x00\x00\x00cpu") == 1      # BINUNICODE 'cpu', memoized
                data = data.replace(b"X\x03\x00\x00\x00cpu",
                                    b"X" + len(location).to_bytes(4, "little") + location)
            archive.writestr(name, data)
    return path


def test_a_checkpoint_saved_on_a_gpu_is_read_onto_the_cpu(tmp_path):
    """``read_checkpoint`` maps every tensor to the CPU: a file a GPU run wrote loads (and
    plays) on a machine without CUDA, and on one with CUDA its dict holds CPU tensors."""
    torch.manual_seed(2)
    net = trained_looking(PolicyNet([16], action_features=2))
    path = relocated(save_policy(tmp_path / "gpu.pt", net), b"cuda:0")
    data = read_checkpoint(path)
    assert {tensor.device.type for tensor in data["model"].values()} == {"cpu"}
    agent = load_policy(path)
    for key, tensor in net.state_dict().items():
        assert torch.equal(agent.model.state_dict()[key], tensor), key


@pytest.mark.parametrize("key", ["obs_version", "obs_size", "num_actions"])
def test_a_layout_value_of_another_type_is_refused_even_when_equal(tmp_path, key):
    """The layout must be ints: ``True`` (== 1, the observation version) or ``238.0`` are not a
    layout this sevenrocks wrote."""
    from sevenrocks_env.observation import OBS_SIZE, OBS_VERSION
    odd = {"obs_version": True if OBS_VERSION == 1 else float(OBS_VERSION),
           "obs_size": float(OBS_SIZE), "num_actions": 113.0}[key]
    with pytest.raises(CheckpointError, match="observation layout"):
        read_checkpoint(save_policy(tmp_path / "odd.pt", **{key: odd}))


@pytest.mark.parametrize("config, words", [
    ({"hidden_sizes": [16], "action_features": 0, "activation": "gelu"}, "unknown keys"),
    ({"hidden_sizes": [2 ** 40], "action_features": 0}, "hidden_sizes"),
    ({"hidden_sizes": [16], "action_features": 9}, "action_features"),
])
def test_read_checkpoint_itself_checks_the_declared_network(tmp_path, config, words):
    """``read_checkpoint``'s dict is for every reader (export, resume, init_from, model cards),
    not only ``build_model``: its ``model_config`` is checked there ("every reader gets a
    checked one")."""
    with pytest.raises(CheckpointError, match=words):
        read_checkpoint(save_policy(tmp_path / "odd.pt", model_config=config))


@pytest.mark.parametrize("change, words", [
    ({"hidden_sizes": []}, "hidden_sizes"),                       # no trunk: IndexError
    ({"hidden_sizes": [16, True]}, "hidden_sizes"),
    ({"action_features": -1}, "action_features"),                 # KeyError in expected_shapes
    ({"value_head": 1}, "value_head"),
    ({"value_head": 0}, "value_head"),
    ({"action_scorer": "mlp", "scorer_sizes": [8] * 5}, "scorer_sizes"),     # MAX_LAYERS 4
    ({"action_scorer": "mlp", "scorer_sizes": [1025]}, "scorer_sizes"),      # MAX_WIDTH 1024
])
def test_a_declared_network_just_outside_the_bounds_is_a_checkpoint_error(tmp_path, monkeypatch,
                                                                         change, words):
    """Every declared network outside the documented bounds is a CheckpointError from
    ``load_policy`` naming the field, before anything is built (not an IndexError or KeyError
    from building it, nor a network of other widths than the file says)."""
    from sevenrocks_env.policy_file import check_model_config
    config = {"hidden_sizes": [16], "action_features": 2, **change}
    with pytest.raises(CheckpointError, match=words):
        check_model_config(config)
    path = save_policy(tmp_path / "odd.pt", model_config=config)
    built = []
    monkeypatch.setattr(PolicyNet, "__init__", lambda self, *a, **k: built.append(a))
    with pytest.raises(CheckpointError, match=words):
        load_policy(path)
    assert built == []


def test_the_bounds_themselves_are_allowed():
    from sevenrocks_env.policy_file import MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH, check_model_config
    from sevenrocks_env.policy_scorer import MAX_LAYERS, MAX_WIDTH
    assert (MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH, MAX_LAYERS, MAX_WIDTH) == (8, 4096, 4, 1024)
    hidden, features, value_head, scorer = check_model_config(
        {"hidden_sizes": [MAX_HIDDEN_WIDTH] * MAX_HIDDEN_LAYERS, "action_features": 3,
         "action_scorer": "mlp", "scorer_sizes": [MAX_WIDTH] * MAX_LAYERS})
    assert hidden == [4096] * 8 and features == 3 and value_head is True
    assert scorer == {"action_scorer": "mlp", "scorer_sizes": [1024] * 4}


@pytest.mark.parametrize("fmt", ["sevenrocks-ppo/2", "sevenrocks-ppo/0", "sevenrocks-ppo/1 "])
def test_another_checkpoint_format_is_refused(tmp_path, fmt):
    """Only ``CHECKPOINT_FORMAT`` itself: a later format may mean other keys and layouts."""
    with pytest.raises(CheckpointError, match="not a sevenrocks policy checkpoint"):
        read_checkpoint(save_policy(tmp_path / "other.pt", format=fmt))


def test_a_model_config_without_action_features_is_a_network_without_them(tmp_path):
    """``action_features`` absent (files from before action features): none, version 0."""
    torch.manual_seed(5)
    net = trained_looking(PolicyNet([16], action_features=0))
    config = {key: value for key, value in net.model_config().items()
              if key != "action_features"}
    agent = load_policy(save_policy(tmp_path / "plain.pt", net, model_config=config))
    assert agent.model.action_features is None
    assert agent.model.model_config()["action_features"] == 0


# -- the masked distribution ----------------------------------------------------------------------

def test_a_draw_just_below_1_is_the_last_legal_action_whatever_the_rounding():
    """``sample_at``: the uniform scales the row's own total (float32 probabilities do not sum
    to exactly 1), so a uniform just below 1 is the last legal action -- not the knock or
    another action past it that the mask forbids -- also in the rows that sum to less than 1
    (about half of them)."""
    from sevenrocks_env.masked_categorical import MaskedCategorical
    rows = 64
    mask = torch.zeros(rows, 113, dtype=torch.bool)
    mask[:, 4:60:3] = True                                       # the last legal action is 58
    logits = torch.randn(rows, 113, generator=torch.Generator().manual_seed(0))
    dist = MaskedCategorical(logits, mask)
    assert (dist.probs.double().sum(1) < 1 - 2 ** -40).sum() >= rows // 4
    below_1 = torch.full((rows,), 1 - 2 ** -53, dtype=torch.double)
    assert dist.sample_at(below_1).tolist() == [58] * rows
    assert dist.sample_at(torch.zeros(rows, dtype=torch.double)).tolist() == [4] * rows


# -- the batched sampling player ------------------------------------------------------------------

def test_a_batched_sampling_players_draw_depends_on_the_move_number():
    """"draw from the distribution by a counter-based hash of (seed, pair, game, move number)":
    the same positions at another move number draw other moves (one uniform for every move of
    a game would tie its draws together)."""
    from sevenrocks_env.batched_agents import batched_agent
    torch.manual_seed(6)
    agent = PolicyAgent(trained_looking(PolicyNet([32], action_features=2)), deterministic=False,
                        temperature=5.0)
    side = batched_agent(agent)
    found = [position(seed, 2 + seed % 17) for seed in range(120)]
    observations = torch.from_numpy(np.stack([o for o, m in found if m.sum() > 2]))
    masks = torch.from_numpy(np.stack([m for o, m in found if m.sum() > 2])).bool()

    class Rows:
        observation, action_mask = observations, masks

    n = len(masks)

    def draws(move: int) -> torch.Tensor:
        chosen = side.actions(Rows, torch.arange(n), {
            "seed": 4, "coordinate": torch.arange(n), "moves": torch.full((n,), move)})
        assert masks[torch.arange(n), chosen].all()
        return chosen

    assert n > 60
    assert torch.equal(draws(3), draws(3))
    assert float((draws(3) != draws(4)).double().mean()) > 0.2
