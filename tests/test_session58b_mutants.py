"""Tests from a mutation audit of session 58's changes (the batched engine's table-driven step,
its tables and round starts, ``Match.from_deal``'s round_index, records, the views' last
observation after an illegal move, the trainer's messages): each kills a mutant the existing
tests let live."""

import random
import re

import pytest
import torch

from sevenrocks_env.rules import Match, apply_action, legal_actions


def test_a_match_won_by_a_domino_awaits_no_opener():
    """R2's finisher opens the round the match awaits; a match over (here max_rounds 1, ended by
    a domino) awaits none, though a hand is empty."""
    match = Match.new(0, max_rounds=1)
    rng = random.Random(0)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    assert match.history[-1].result == "domino" and 0 in match.hands
    assert not match.awaiting_deal and match.finisher_opens is None


def test_a_match_dealt_at_round_1_has_no_record():
    from sevenrocks_env import record
    from sevenrocks_env.dealing import deal

    match = Match.from_deal(*deal(7, 0), seed=7, max_rounds=3, round_index=1)
    with pytest.raises(ValueError, match=r"^this match's history starts at round 1, not the first"):
        record.game_record(match)


def test_a_seed_given_as_an_array_is_refused_with_its_shape_and_how_to_pass_an_int():
    import numpy as np

    from sevenrocks_env.checks import checked_seed

    with pytest.raises(TypeError, match=r"got ndarray <ndarray> \(shape \(1,\), dtype int64: "
                                        r"pass a Python int, e\.g\. int\(a\.item\(\)\)\)$"):
        checked_seed(np.array([3]))


class _Writer:
    def __init__(self):
        self.scalars, self.images = {}, []

    def add_scalar(self, key, value, step):
        self.scalars[key] = (value, step)

    def add_image(self, key, image, step, dataformats):
        self.images.append((key, step, dataformats))


def _evaluation(monkeypatch):
    """training.evaluation with the arena and the picture's match stubbed: ``(module, calls)``,
    ``calls`` the agents the picture was drawn against."""
    import types

    import numpy as np

    from training import evaluation

    calls = []
    monkeypatch.setattr(evaluation, "evaluate_policy", lambda *args: {})

    def picture(model, spec, seed, target, max_rounds):
        calls.append(spec)
        return np.zeros((2, 2, 3), np.uint8)

    monkeypatch.setattr(evaluation, "eval_game_picture", picture)
    cfg = types.SimpleNamespace(eval_agents=["random", "greedy"], eval_seed=1, target=40,
                                max_rounds=5)
    return evaluation, calls, cfg


def test_evaluate_and_log_logs_minutes_pairs_and_a_picture_against_the_last_agent(monkeypatch):
    evaluation, calls, cfg = _evaluation(monkeypatch)
    writer = _Writer()
    assert evaluation.evaluate_and_log(writer, None, cfg, 7, 512, 120.0, {}) == {}
    assert calls == ["greedy"]
    assert writer.scalars == {"eval/wall_minutes": (2.0, 512), "eval/pairs": (7, 512)}
    assert writer.images == [("eval/game", 512, "HWC")]


def test_evaluate_and_log_refuses_an_eval_agent_whose_files_changed(monkeypatch):
    from sevenrocks_env.driver import AgentError
    from training import agent_files

    evaluation, calls, cfg = _evaluation(monkeypatch)
    monkeypatch.setattr(agent_files, "fingerprints",
                        lambda specs, key: {"greedy": "b" * 64})
    writer = _Writer()
    with pytest.raises(AgentError, match="eval_agents 'greedy' loads other weights"):
        evaluation.evaluate_and_log(writer, None, cfg, 7, 512, 120.0, {"greedy": "a" * 64})
    assert calls == [] and writer.scalars == {} and writer.images == []


def _first_legal(venv):
    return venv.action_mask.to(torch.uint8).argmax(1)


def test_a_match_cut_by_max_rounds_counts_and_the_next_match_is_dealt_as_match_1():
    """Round r of env i's m-th match is dealt from (seed, i, m, r): after a cut (max_rounds 1,
    no win) the next match is m = 1, round 0, its opener drawn (not the domino's finisher)."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.deal import deal

    venv = VectorEnv(8, target=250, max_rounds=1)
    venv.reset(seed=3)
    for _ in range(200):
        _, terminated, truncated = venv.step(_first_legal(venv))
        if truncated.any():
            break
    assert not terminated.any()
    rows = truncated.nonzero().squeeze(1)
    hands, opener = deal(3, rows, torch.ones_like(rows), torch.zeros_like(rows))
    assert venv.state.matches[rows].tolist() == [1] * len(rows)
    assert venv.state.round_index[rows].tolist() == [0] * len(rows)
    assert torch.equal(venv.state.hands[rows], hands)
    assert torch.equal(venv.state.turn[rows], opener)
    assert torch.equal(venv.state.opener[rows], opener)
    # a fresh round: nothing placed, every slot closed, no spinner
    assert venv.state.placements[rows].tolist() == [0] * len(rows)
    assert (venv.state.ends[rows] == -1).all() and (venv.state.spinner[rows] == -1).all()


@pytest.mark.parametrize("slot", [1, 2, 3])
def test_validate_false_refuses_an_opening_at_a_slot_other_than_west(slot):
    """The opening is at west (slot 0); at another closed slot it is an illegal end the step's
    lookups refuse (tables.ILLEGAL_END), not a second way to open."""
    from sevenrocks_env import sevenrocks_v0

    venv = sevenrocks_v0.vector_env(num_envs=1, validate=False)
    venv.reset(seed=1)
    west = int(_first_legal(venv)[0])
    assert west & 3 == 0 and west < 112
    action = torch.tensor([west + slot])
    assert not bool(venv.action_mask[0, action])
    with pytest.raises(ValueError, match="illegal action was played with validate=False"):
        venv.step(action)


def test_a_network_of_8_layers_and_one_of_width_4096_build():
    from sevenrocks_env.policy import PolicyNet

    assert PolicyNet([2] * 8).hidden_sizes == [2] * 8
    assert PolicyNet((4096,)).hidden_sizes == [4096]
    with pytest.raises(ValueError, match=r"^hidden_sizes must be 1-8 layer widths \(1-4096\)"):
        PolicyNet([4097])


def test_hidden_sizes_that_are_no_list_or_tuple_are_refused():
    """A dict of one int key has a length and int items, but no layer widths."""
    from sevenrocks_env.policy import PolicyNet

    with pytest.raises(ValueError, match=r"^hidden_sizes must be 1-8 layer widths \(1-4096\), "
                                         r"got \{32: 1\}$"):
        PolicyNet({32: 1})


def test_validate_false_passes_on_an_engine_error_that_is_no_failed_lookup(monkeypatch):
    """Eager, validate=False: only a failed table lookup (IndexError) is an illegal action's
    fault; another error of the step (a RuntimeError: an engine bug) is raised as it is and
    does not lock the env."""
    from sevenrocks_env.batched import VectorEnv, engine

    venv = VectorEnv(2, validate=False)
    venv.reset(seed=0)
    real = engine.step

    def broken(*args, **kwargs):
        raise RuntimeError("an engine bug")

    monkeypatch.setattr(engine, "step", broken)
    with pytest.raises(RuntimeError, match="^an engine bug$"):
        venv.step(_first_legal(venv))
    monkeypatch.setattr(engine, "step", real)
    venv.step(_first_legal(venv))
    assert int(venv.state.placements.sum()) == 2


def test_a_placement_takes_the_tile_from_the_movers_hand_only_at_every_seat():
    """seat_bits[113 seat + action]: the tile's bit in the mover's column, for each seat."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.tiles import KNOCK

    venv = VectorEnv(8, target=250, max_rounds=None)
    venv.reset(seed=5)
    movers = set()
    for _ in range(8):
        actions = _first_legal(venv)
        seats = venv.state.turn.clone()
        hands, played_by = venv.state.hands.clone(), venv.state.played_by.clone()
        venv.step(actions)
        for env, (action, seat) in enumerate(zip(actions.tolist(), seats.tolist())):
            if action == KNOCK or venv.state.placements[env] == 0:  # (a knock; a new round)
                continue
            movers.add(seat)
            change = torch.zeros(4, dtype=torch.long)
            change[seat] = 1 << (action >> 2)
            assert torch.equal(hands[env] ^ venv.state.hands[env], change), (env, seat)
            assert torch.equal(venv.state.played_by[env] - played_by[env], change), (env, seat)
    assert movers == {0, 1, 2, 3}


def test_the_trainer_s_messages_without_max_minutes_and_with_a_long_final_evaluation(
        tmp_path, monkeypatch, capsys):
    """No 'training stops' when max_minutes is 0; the summary's training minutes are the
    checkpoint's, the final evaluation's time (here a clock moved on 10 minutes) beside them."""
    pytest.importorskip("tensorboard")
    import time
    import types
    from pathlib import Path

    import training.train as train_mod
    from training.config import load_config

    offset = [0.0]
    monkeypatch.setattr(train_mod, "time", types.SimpleNamespace(
        time=lambda: time.time() + offset[0], strftime=time.strftime))
    real = train_mod.evaluate_and_log

    def slow_evaluation(*args, **kwargs):
        offset[0] += 600.0
        return real(*args, **kwargs)

    monkeypatch.setattr(train_mod, "evaluate_and_log", slow_evaluation)
    smoke = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    cfg = load_config(smoke, [f"log_dir={tmp_path / 'runs'}",
                              f"checkpoint_dir={tmp_path / 'ckpt'}", "total_steps=256",
                              "eval_every=0", "final_eval_pairs=1", "max_minutes=0"])
    train_mod.train(cfg)
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("run smoke (logs ") and "training stops" not in first
    # (the minutes are wall time: a busy machine's 256 steps can take 0.1 min or more)
    found = re.search(r"run smoke: 256 steps, (\S+) min of training \((\S+) with the final "
                      r"evaluation\)", out)
    training, with_evaluation = float(found[1]), float(found[2])
    assert training < 5 and 9.9 <= with_evaluation - training < 15
