"""The research scripts' figures, continued from ``test_research_scripts_audit.py``:
``benchmarks/inference_signal.py`` and ``cut_bias.py`` (whose printed figures docs/agents.md
and docs/experiments.md quote) measure what their tables say -- every nth real choice of the
first matches, the rows' arithmetic, the continuation targets, the bias's mean and standard
error -- with stand-ins where strength would be measured."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from test_benchmarks_tables import accepted, script, table_rows, usage_error

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set threads: restored


# -- inference_signal ----------------------------------------------------------------------------

def test_inference_signal_measures_every_nth_real_choice_of_first_matches(monkeypatch):
    """Each row, recomputed: the seat on turn's real choice, every ``every``-th of its env's first
    match; the share of the hidden tiles each world gives their true owner (relative seat ``k``
    is seat ``turn + k``), uniform and weighted by ``likelihood ** power``, the effective worlds
    and the round's moves so far.  The sampler's first world is the true deal (share 1)."""
    module = script("inference_signal")
    from sevenrocks_env.agents.belief import HandSampler
    from sevenrocks_env.agents.inference import world_weights
    from sevenrocks_env.policy import load_policy
    envs, choices, expected, seeds = [], {}, [], {}

    class Env(module.VectorEnv):
        def __init__(self, *args, **options):
            super().__init__(*args, **options)
            seeds["options"] = options
            envs.append(self)

        def reset(self, seed=None):
            seeds["reset"] = seed
            return super().reset(seed)

        def step(self, actions):
            counts = self.action_mask.sum(1)
            for e in range(self.num_envs):
                if int(self.state.matches[e]) == 0 and int(counts[e]) > 1:
                    choices[e] = choices.get(e, 0) + 1
            return super().step(actions)

    class Sampler:
        def __init__(self, view):
            self.view = view

        def sample_many(self, rng, count):
            if "rng" not in seeds:
                fresh = np.random.default_rng(5).bit_generator.state
                seeds["rng"] = rng.bit_generator.state == fresh
            env, = envs
            on_turn = [e for e in range(env.num_envs) if env.state.hands[
                e, int(env.state.turn[e])] == self.view.hand]
            e, = on_turn
            turn = int(env.state.turn[e])
            assert int(env.state.matches[e]) == 0 and int(env.action_mask[e].sum()) > 1
            assert (choices.get(e, 0) + 1) % 6 == 0  # the 6th, 12th, ... real choice
            hands = env.state.hands[e].tolist()
            truth = tuple(hands[(turn + k) % 4] for k in (1, 2, 3))
            worlds = [truth, *HandSampler(self.view).sample_many(rng, count - 1)]
            share = np.array([sum((w & t).bit_count() for w, t in zip(world, truth))
                              for world in worlds]) / self.view.unseen.bit_count()
            expected.append([e, share, None])
            return worlds

    def likelihoods(searcher, history, env, measured, worlds):
        rows = real(searcher, history, env, measured, worlds)
        for row, e in zip(rows, measured.tolist()):
            entry, = [x for x in expected if x[0] == e and x[2] is None]
            entry[2] = (row, int(history.length[e]))
        return rows

    real = module.play_log_likelihoods
    monkeypatch.setattr(module, "VectorEnv", Env)
    monkeypatch.setattr(module, "HandSampler", Sampler)
    monkeypatch.setattr(module, "play_log_likelihoods", likelihoods)
    sampled, real_sample = [], module.MaskedCategorical.sample
    monkeypatch.setattr(module.MaskedCategorical, "sample",
                        lambda self, generator: sampled.append(generator.initial_seed())
                        or real_sample(self, generator))
    model = load_policy("shipped").model.eval()
    rows = module.measure(model, 2, 3, 5, 0.5, False, 6)
    assert seeds == {"options": {"target": 250, "max_rounds": None, "validate": False},
                     "reset": 5, "rng": True}
    assert sampled and set(sampled) == {5}
    assert len(rows) == len(expected) == sum(n // 6 for n in choices.values()) > 0
    for (e, uniform, weighted, ess, moves), (e2, share, (logl, length)) in zip(rows, expected):
        weights = world_weights(logl, 0.5)
        assert e == e2 and share[0] == 1.0 and len(share) == 3
        assert uniform == pytest.approx(share.mean())
        assert weighted == pytest.approx(float(weights @ share))
        assert ess == pytest.approx(1 / float(weights @ weights)) and moves == length
    # --greedy: the seats play their most probable move, never a sample
    sampled.clear()

    def mode(self):
        raise KeyboardInterrupt  # the first move is all this check needs
    monkeypatch.setattr(module.MaskedCategorical, "mode", mode)
    with pytest.raises(KeyboardInterrupt):
        module.measure(model, 1, 2, 5, 1.0, True, 1000)
    assert sampled == []


def test_inference_signal_reports_the_rows_arithmetic(monkeypatch, capsys):
    module = script("inference_signal")
    calls = []
    rows = [(0, 0.30, 0.40, 10.0, 4), (0, 0.50, 0.45, 20.0, 8), (1, 0.20, 0.50, 30.0, 2),
            (2, 0.40, 0.40, 40.0, 10), (2, 0.10, 0.30, 50.0, 11)]
    monkeypatch.setattr(module, "measure", lambda *args: calls.append(args) or rows)
    monkeypatch.setattr(module, "load_policy", lambda name: SimpleNamespace(
        model=SimpleNamespace(eval=lambda: "model")))
    assert module.main(["--matches", "3", "--samples", "9", "--seed", "8", "--power", "0.5",
                        "--greedy", "--every", "2"]) == 0
    assert calls == [("model", 3, 9, 8, 0.5, True, 2)]
    out = capsys.readouterr().out
    assert table_rows(out, "uniform") == [["uniform (the search's)", "0.300", "9"]]
    assert table_rows(out, "weighted") == [["weighted by the other seats' plays this round",
                                            "0.410", "30.0"]]
    gains = {0: [0.1, -0.05], 1: [0.3], 2: [0.0, 0.2]}
    means = [np.mean(g) for g in gains.values()]
    # three matches: too few for Student's t interval (the arena's rule: four at least)
    assert (f"weighted - uniform: mean +0.110; over the 3 matches' means {np.mean(means):+.3f} "
            "(too few matches for a 95% CI); positive in 60% of the decisions; moves this round "
            "before the decision (all seats, knocks included): 7.0 on average") in out
    module.main([])
    assert calls[-1][1:] == (40, 64, 5, 1.0, False, 5)


# -- cut_bias ------------------------------------------------------------------------------------

def test_cut_bias_refuses_a_policy_file_with_no_value_to_measure(monkeypatch, capsys):
    """The shipped file has neither an oracle critic nor a value head: one usage line before
    any play (the bias is of a value estimate)."""
    from sevenrocks_env.policy_file import shipped_path

    module = script("cut_bias")
    monkeypatch.setattr(module, "CutRecorder", accepted)
    assert "has neither an oracle critic nor a value head" in usage_error(
        module.main, [str(shipped_path()), "--matches", "1", "--steps", "1"], capsys)


def test_cut_bias_summary_is_the_mean_and_its_standard_error():
    summary = script("cut_bias").summary
    # mean 3, std (ddof 1) sqrt(14 / 3) = 2.160, over sqrt(4)
    assert summary(np.array([1.0, 2.0, 3.0, 6.0])) == "+3.000 ± 1.080"
    assert summary(np.zeros(0)) == "-" and summary(np.array([0.5])) == "+0.500 ± nan"


class LowestAction(torch.nn.Module):
    """A policy that plays the lowest legal action (so a continuation is one known line); its V is
    a function of the observation.  It checks that each observation is the view of the seat to
    move: every tile it may play is in that view's hand."""

    def forward(self, obs, mask):
        from sevenrocks_env.observation import decode
        from sevenrocks_env.tiles import KNOCK, decode_action
        for row, legal in zip(obs, mask):
            hand = decode(row.numpy()).hand
            assert all(hand >> decode_action(a)[0] & 1 for a in legal.nonzero().flatten().tolist()
                       if a != KNOCK)
        logits = -1000.0 * torch.arange(mask.shape[1], dtype=torch.float32).expand(mask.shape)
        return logits, None

    def value(self, obs):
        return obs.float()[:, :40].sum(1) / 100


def _line_target(match, seat, margin, value, points_scale, win_reward):
    """The documented target, on the line the lowest legal action plays: the reward from the
    seat's decision to its next real decision plus V there, or to the match's end with R8's
    win reward."""
    from sevenrocks_env.rules import apply_action, legal_actions
    match, ours = match.clone(), seat % 2
    while True:
        change = match.scores[ours] - match.scores[1 - ours] - margin
        if match.over:
            sign = 0 if match.winner is None else (1 if match.winner == ours else -1)
            return points_scale * change + win_reward * sign, sign
        legal = legal_actions(match)
        if len(legal) > 1 and match.turn == seat:
            return points_scale * change + value(match, seat), None
        apply_action(match, min(legal))


def test_cut_bias_continuation_targets_follow_the_seat_to_its_next_real_decision():
    module = script("cut_bias")
    from sevenrocks_env.observation import encode
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from training.critic import hidden_hands
    model = LowestAction()
    rng = np.random.default_rng(0)
    starts = []
    for game in range(3):  # the lowest action's own line, to the match's end: the continuations
        match, line = Match.new(game, target=25), []  # from its last positions reach the end
        while not match.over:
            line.append(match.clone())
            apply_action(match, min(legal_actions(match)))
        for position in line[:-40:7] + line[-6:]:
            starts += [(position, seat, int(rng.integers(-5, 6))) for seat in range(4)]

    def head(match, seat):
        return float(model.value(torch.from_numpy(encode(match, seat)[None]))[0])

    def critic(obs, hands):  # the oracle critic, when the checkpoint has one: V of the hands
        return hands.float().sum(1) / 1000 + obs.float()[:, :40].sum(1) / 100

    def by_critic(match, seat):
        hands = torch.from_numpy(hidden_hands(match, seat)[None])
        obs = torch.from_numpy(encode(match, seat)[None])
        return float(critic(obs, hands)[0])

    for critic_, value in ((None, head), (critic, by_critic)):
        targets = module.continuation_targets(model, critic_, starts, torch.Generator(), 0.02, 3.0)
        lines = [_line_target(m, s, margin, value, 0.02, 3.0) for m, s, margin in starts]
        assert targets == pytest.approx([t for t, _ in lines], abs=1e-5)
    assert {sign for _, sign in lines} >= {None, 1, -1}  # lines to both ends of a match


def _record_cut_bias(monkeypatch, module):
    """The pieces of ``cut_bias.main``'s run, for its figures to be recomputed."""
    seen = {"summaries": [], "continuations": []}

    class Engine(module.CutRecorder):
        def __init__(self, *args):
            super().__init__(*args)
            seen["engine"], seen["engine_args"] = self, args

        def _cut(self, model, buffer, critic=None):
            seen["rewards_before"] = buffer.rewards.copy()  # (the script's own copy is checked)
            super()._cut(model, buffer, critic)

    class Buffer(module.RolloutBuffer):
        def __init__(self, *args):
            super().__init__(*args)
            seen["buffer"] = self

    real_targets, real_summary = module.continuation_targets, module.summary

    def targets(model, critic, starts, generator, points_scale, win_reward):
        seen["continuations"].append((list(starts), generator.initial_seed()))
        seen["samples"] = real_targets(model, critic, starts, generator, points_scale,
                                       win_reward)
        return seen["samples"].copy()

    monkeypatch.setattr(module, "CutRecorder", Engine)
    monkeypatch.setattr(module, "RolloutBuffer", Buffer)
    monkeypatch.setattr(module, "continuation_targets", targets)
    monkeypatch.setattr(module, "summary",
                        lambda bias: seen["summaries"].append(bias.copy()) or real_summary(bias))
    return seen


def test_cut_bias_figures_are_the_documented_estimates_and_groups(monkeypatch, tmp_path, capsys):
    """Recomputed from the engine's state at the cut: old = the reward so far + V(the seat's view
    now); new = what the trainer's cut added (+ its bootstrap, unless the match ended); the target
    the mean of the continuations; the groups by who is to move, relative to the seat (1: the
    left opponent, next to play)."""
    from policy_files import save_policy
    from sevenrocks_env.observation import encode
    from sevenrocks_env.policy import read_checkpoint
    from sevenrocks_env.rules import Match, legal_actions
    from training.critic import OracleCritic, hidden_hands
    torch.manual_seed(0)
    path = save_policy(tmp_path / "run.pt", critic=OracleCritic([16]).state_dict(),
                       config={"target": 30, "points_scale": 0.05, "win_reward": 2.0,
                               "max_rounds": 50})
    module = script("cut_bias")
    seen = _record_cut_bias(monkeypatch, module)
    samples = 3
    assert module.main([str(path), "--matches", "6", "--steps", "40", "--samples", str(samples),
                        "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert seen["engine_args"] == (6, 5, 30, 50, 0.05, 2.0) and len(seen["buffer"].rewards) == 240
    assert torch.initial_seed() == 5
    (starts, generator_seed), = seen["continuations"]
    assert generator_seed == 6
    data = read_checkpoint(str(path))
    critic = OracleCritic([16]).eval()
    critic.load_state_dict(data["critic"])
    states, pending, margins, _ = seen["engine"].before
    before = seen["rewards_before"]
    buffer = seen["buffer"]
    cuts = [(Match.from_state(states[i]), int(seat), int(margins[i, seat]), int(pending[i, seat]))
            for i, seat in np.argwhere(pending >= 0)]
    n = len(cuts)
    assert len(starts) == n * samples and all(  # each cut, with its margin, --samples times
        a[0].to_state() == b[0].to_state() and a[1:] == b[1:]
        for a, b in zip(starts, [c[:3] for c in cuts] * samples))

    def value(match, seat):
        with torch.no_grad():
            return float(critic(torch.from_numpy(encode(match, seat)[None]),
                                torch.from_numpy(hidden_hands(match, seat)[None]))[0])

    old = np.array([0.05 * (m.scores[s % 2] - m.scores[1 - s % 2] - margin) + value(m, s)
                    for m, s, margin, _ in cuts])
    new = np.array([buffer.rewards[k] - before[k]
                    + (0.0 if buffer.dones[k] else buffer.bootstrap[k]) for *_, k in cuts])
    draws = seen["samples"].reshape(samples, n)
    target = draws.mean(0)
    old_bias, new_bias = seen["summaries"][:2]
    assert old_bias == pytest.approx(old - target, abs=1e-5)
    assert new_bias == pytest.approx(new - target, abs=1e-5)
    assert any(buffer.dones[k] for *_, k in cuts) and any(margin for _, _, margin, _ in cuts)
    groups = []
    for m, s, _, _ in cuts:
        relative = (m.turn - s) % 4
        real = len(legal_actions(m)) > 1
        groups.append(["own turn, real choice" if real else "own turn, forced", "left opponent",
                       "partner", "right opponent"][relative])
    groups = np.array(groups)
    own = groups == "own turn, real choice"
    assert own.any() and old[own] == pytest.approx(target[own], abs=1e-5)  # its next decision: now
    assert new[own] == pytest.approx(old[own], abs=1e-5)  # the trainer's cut: V by the critic
    for group in module.GROUPS:  # (one seat of each match in each opponent group: the biases)
        row, = table_rows(out, f"seat to move: {group}")
        sel = groups == group
        assert row[1:] == [str(sel.sum()), module.summary(old_bias[sel]),
                           module.summary(new_bias[sel])]
    left, right = (table_rows(out, f"seat to move: {side}")[0] for side in ("left", "right"))
    assert left[2] != right[2]
    rms, = table_rows(out, "RMS")
    assert rms[1:] == [str(n), f"{np.sqrt((old_bias ** 2).mean()):.3f}",
                       f"{np.sqrt((new_bias ** 2).mean()):.3f}"]
    mc_se = np.sqrt((draws.var(0, ddof=1) / samples).mean() / n)
    header = out.splitlines()[0]
    assert f"its MC standard error (mean over transitions) {mc_se:.3f}" in header
    assert f"target std {target.std():.3f}" in header
    assert "V = the checkpoint's oracle critic" in header


def test_cut_bias_defaults_without_a_config_and_its_bounds(monkeypatch, tmp_path):
    from policy_files import save_policy
    module = script("cut_bias")
    seen = _record_cut_bias(monkeypatch, module)
    path = str(save_policy(tmp_path / "policy.pt"))
    assert module.main([path, "--matches", "1", "--steps", "2", "--samples", "2"]) == 0
    assert seen["engine_args"] == (1, 2024, 250, 60, 0.01, 1.0)
    monkeypatch.setattr(module, "read_checkpoint", accepted)
    # (past them: test_benchmarks_tables.py's test_scripts_bound_their_arguments)
    with pytest.raises(AssertionError, match="accepted"):  # at the bounds: taken
        module.main([path, "--matches", "16", "--steps", "65536", "--samples", "1024"])
