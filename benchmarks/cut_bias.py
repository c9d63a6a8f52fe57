"""Bias of the bootstrap at rollout cut-offs (issue 17), before and after the fix, as a table.

    .venv/bin/python benchmarks/cut_bias.py CHECKPOINT [--matches 128] [--steps 64] [--samples 8]

``CHECKPOINT`` is a training checkpoint (``step_<n>.pt``/``latest.pt``); its oracle critic is
used if the run had one (``critic: oracle``), else the policy's value head.

Method.  Self-play ``--matches`` matches with the checkpoint's policy for ``--steps`` decisions
each, exactly as the trainer's rollout does; at the cut, every open transition (one per seat
that has decided in the match so far) is checked.  Its target is the expectation of what an
uncut trajectory would use: the rewards until the seat's next real (non-forced) decision plus V
there (or the final reward, R8, if the match ends first), estimated by ``--samples`` independent
continuations played here with the same policy (a plain per-seat loop, independent of the
trainer's code).  All rewards are counted from the seat's decision, so what both estimates share
cancels.  Compared:

* **old**: the reward up to the cut + V(the seat's view of the state at the cut), as the trainer
  did before the fix;
* **new**: the trainer's own :meth:`~training.rollout.SelfPlayEngine._cut` (one continuation).

Bias = estimate - target, per transition.  The standard error of the mean bias is the spread of
the per-transition biases over sqrt(n), so it includes the Monte Carlo noise of the targets and,
for the new estimate, of its single continuation (whose RMS is therefore mostly that noise).
Rows "seat to move" group the transitions by who is on turn at the cut, relative to the seat.
The header says the seeds: ``--seed`` for the self-play (its deals and moves, and torch's global
seed), ``--seed + 1`` for the continuations.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sevenrocks_env import arguments  # noqa: E402
from sevenrocks_env.observation import encode  # noqa: E402
from sevenrocks_env.policy import (CheckpointError, MaskedCategorical, build_model,  # noqa: E402
                                   read_checkpoint)
from sevenrocks_env.rewards import team0_reward  # noqa: E402
from sevenrocks_env.rules import Match, apply_action, legal_actions, team_of  # noqa: E402
from sevenrocks_env.tiles import NUM_ACTIONS  # noqa: E402
from training.config import MAX_BATCH  # noqa: E402
from training.critic import OracleCritic, hidden_hands  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

#: The trainer's bounds on ``num_matches`` and ``num_steps`` (``training/config.py``); their
#: product, the rollout buffer (~1 kB a decision), is at most its ``MAX_BATCH`` too.
MAX_MATCHES = MAX_STEPS = 65536
#: The most ``--samples``, and the most continuations one run plays (``4 * --matches *
#: --samples``: up to four open transitions a match, each continued ``--samples`` times, each
#: from a copy of its match of ~1 kB).
MAX_SAMPLES, MAX_CONTINUATIONS = 1024, 1 << 20

GROUPS = ("own turn, real choice", "own turn, forced", "left opponent", "partner",
          "right opponent")


class CutRecorder(SelfPlayEngine):
    """The trainer's engine, keeping the state each cut starts from."""

    def _cut(self, model, buffer, critic=None):
        self.before = ([m.to_state() for m in self.matches], self.pending.copy(),
                       self.pending_margin.copy(), buffer.rewards.copy())
        super()._cut(model, buffer, critic)


def value_of(model, critic, items) -> np.ndarray:
    """V of ``(match, seat)`` pairs: the oracle critic's if given, else the value head's."""
    if not items:
        return np.zeros(0)
    obs = torch.from_numpy(np.stack([encode(m, s) for m, s in items]))
    with torch.no_grad():
        if critic is None:
            return model.value(obs).numpy()
        hands = torch.from_numpy(np.stack([hidden_hands(m, s) for m, s in items]))
        return critic(obs, hands).numpy()


def continuation_targets(model, critic, starts, generator, points_scale, win_reward):
    """One sampled ``rewards until the seat's next real decision + V there`` per start
    ``(match, seat, margin at its decision)``, batched over the starts."""
    runs = [[match.clone(), seat, margin] for match, seat, margin in starts]
    targets = np.zeros(len(runs))
    at_decision = []     # (run index, match, seat)
    active = list(range(len(runs)))
    while active:
        waiting = []
        for r in active:
            match, seat, margin = runs[r]
            while True:
                ours = team_of(seat)
                if match.over:
                    sign = 0 if match.winner is None else (1 if match.winner == ours else -1)
                    targets[r] = team0_reward(match.scores[ours] - match.scores[1 - ours]
                                              - margin, sign, points_scale, win_reward)
                    break
                legal = legal_actions(match)
                if len(legal) > 1:
                    if match.turn == seat:
                        targets[r] = team0_reward(match.scores[ours] - match.scores[1 - ours]
                                                  - margin, 0, points_scale, win_reward)
                        at_decision.append((r, match, seat))
                    else:
                        waiting.append((r, legal))
                    break
                apply_action(match, legal[0])
        if not waiting:
            break
        obs = torch.from_numpy(np.stack([encode(runs[r][0], runs[r][0].turn) for r, _ in waiting]))
        mask = torch.zeros(len(waiting), NUM_ACTIONS, dtype=torch.bool)
        for row, (_, legal) in enumerate(waiting):
            mask[row, legal] = True
        with torch.no_grad():
            logits, _ = model(obs, mask)
        actions = torch.multinomial(MaskedCategorical(logits, mask).probs, 1,
                                    generator=generator).squeeze(-1).tolist()
        for (r, _), action in zip(waiting, actions):
            apply_action(runs[r][0], action)
        active = [r for r, _ in waiting]
    values = value_of(model, critic, [(m, s) for _, m, s in at_decision])
    for (r, _, _), value in zip(at_decision, values):
        targets[r] += value
    return targets


def summary(bias: np.ndarray) -> str:
    if len(bias) == 0:
        return "-"
    se = bias.std(ddof=1) / np.sqrt(len(bias)) if len(bias) > 1 else float("nan")
    return f"{bias.mean():+.3f} ± {se:.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--matches", type=arguments.int_in(1, MAX_MATCHES), default=128)
    parser.add_argument("--steps", type=arguments.int_in(1, MAX_STEPS), default=64)
    parser.add_argument("--samples", type=arguments.int_in(2, MAX_SAMPLES), default=8,
                        help="rollouts a cut is estimated from (2 at least: a standard error)")
    parser.add_argument("--seed", type=arguments.seed, default=2024,
                        help="seed of the self-play (the continuations: this + 1)")
    args = parser.parse_args(argv)
    if args.matches * args.steps > MAX_BATCH:
        parser.error(f"--matches * --steps must be at most {MAX_BATCH} (the trainer's largest "
                     f"rollout), got {args.matches * args.steps}")
    if 4 * args.matches * args.samples > MAX_CONTINUATIONS:
        parser.error(f"4 * --matches * --samples (continuations) must be at most "
                     f"{MAX_CONTINUATIONS}, got {4 * args.matches * args.samples}")
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    try:
        data = read_checkpoint(args.checkpoint)
        model = build_model(data, args.checkpoint).eval()
    except CheckpointError as error:
        parser.error(str(error))
    cfg = data.get("config") if isinstance(data.get("config"), dict) else {}
    critic = None
    if data.get("critic"):  # the policy's (checked) widths, not the file's config, size it
        critic = OracleCritic(model.hidden_sizes).eval()
        try:
            critic.load_state_dict(data["critic"])
        except (RuntimeError, TypeError, AttributeError) as error:
            parser.error(f"{args.checkpoint}: its critic does not fit the policy's network "
                         f"({str(error).splitlines()[0][:120]})")
    elif not data["model_config"].get("value_head", True):
        parser.error(f"{args.checkpoint} has neither an oracle critic nor a value head (a "
                     "shipped policy-only file?): pass a training checkpoint of the run")
    points_scale, win_reward = cfg.get("points_scale", 0.01), cfg.get("win_reward", 1.0)
    engine = CutRecorder(args.matches, args.seed, cfg.get("target", 250), cfg.get("max_rounds", 60),
                         points_scale, win_reward)
    buffer = RolloutBuffer(args.matches * args.steps)
    engine.collect(model, buffer, args.steps, critic)
    states, pending, margins, rewards_before = engine.before

    cuts, groups = [], []
    for i, seat in np.argwhere(pending >= 0):
        match = Match.from_state(states[i])
        relative = (match.turn - seat) % 4
        forced = relative == 0 and len(legal_actions(match)) == 1
        groups.append(GROUPS[relative + 1] if relative else GROUPS[1 if forced else 0])
        cuts.append((match, int(seat), int(margins[i, seat]), int(pending[i, seat])))
    groups = np.array(groups)
    n = len(cuts)

    # old: reward up to the cut + V(now);  new: what the trainer's cut wrote
    ours = [team_of(s) for _, s, _, _ in cuts]
    so_far = np.array([points_scale * (m.scores[t] - m.scores[1 - t] - margin)
                       for (m, _, margin, _), t in zip(cuts, ours)])
    old = so_far + value_of(model, critic, [(m, s) for m, s, _, _ in cuts])
    ks = np.array([k for *_, k in cuts])
    new = (buffer.rewards[ks] - rewards_before[ks]
           + np.where(buffer.dones[ks], 0.0, buffer.bootstrap[ks]))

    generator = torch.Generator().manual_seed(args.seed + 1)
    starts = [(m, s, margin) for m, s, margin, _ in cuts] * args.samples
    samples = continuation_targets(model, critic, starts, generator, points_scale, win_reward)
    samples = samples.reshape(args.samples, n)
    target = samples.mean(0)
    mc_se = np.sqrt((samples.var(0, ddof=1) / args.samples).mean() / n)

    value_name = "oracle critic" if critic is not None else "policy value head"
    print(f"{n} cut transitions from {args.matches} self-play matches cut after {args.steps} "
          f"decisions, {args.samples} continuations each; V = the checkpoint's {value_name} "
          f"({args.checkpoint}, step {data.get('global_step')}); target std {target.std():.3f}, "
          f"its MC standard error (mean over transitions) {mc_se:.3f}; seeds: self-play "
          f"--seed {args.seed}, continuations {args.seed + 1}\n")
    print("| quantity | n | old: V(state at the cut) | new: V at the seat's next decision |")
    print("|---|---:|---:|---:|")
    old_bias, new_bias = old - target, new - target
    print(f"| mean bias ± s.e. | {n} | {summary(old_bias)} | {summary(new_bias)} |")
    print(f"| RMS | {n} | {np.sqrt((old_bias ** 2).mean()):.3f} | "
          f"{np.sqrt((new_bias ** 2).mean()):.3f} |")
    for group in GROUPS:
        sel = groups == group
        print(f"| seat to move: {group} | {sel.sum()} | {summary(old_bias[sel])} | "
              f"{summary(new_bias[sel])} |")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/cut_bias.py", main))
