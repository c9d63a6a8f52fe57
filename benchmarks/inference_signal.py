"""How much the other seats' plays say about their hands: uniform worlds against worlds weighted
by the policy's likelihood of those plays (the inference a search could add).

    .venv/bin/python benchmarks/inference_signal.py --matches 40 --samples 64 --seed 5

The search samples its worlds uniformly among the deals consistent with the tile counts and
knocks (``agents.belief.HandSampler``).  A world in which the other seats' plays this round were
likely under the policy is more likely to be the real deal, if the seats play like the policy.
For decisions of matches the shipped policy plays against itself on the batched engine (sampling
from its distribution, ``--greedy`` for its most probable move), this script samples
``--samples`` worlds for the seat on turn and weights each by the policy's probability of the
three other seats' real moves this round, replayed in that world
(:func:`sevenrocks_env.agents.inference.play_log_likelihoods`; ``--power`` < 1 tempers it).
It reports how many of the hidden tiles the worlds place with their true owner, uniform and
weighted, and the weighted worlds' effective sample size.  No arena game is played: this is the
signal inference would have to work with, not a strength figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
import torch

from sevenrocks_env import arguments
from sevenrocks_env.agents.belief import HIDDEN_SEATS, HandSampler
from sevenrocks_env.agents.inference import MAX_POWER, play_log_likelihoods, world_weights
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.batched import VectorEnv, layout
from sevenrocks_env.batched.history import RoundHistory
from sevenrocks_env.observation import decode
from sevenrocks_env.policy import MaskedCategorical, load_policy
from sevenrocks_env.ratings import mean_interval


def measure(model, matches: int, samples: int, seed: int, power: float, greedy: bool,
            every: int):
    """Rows ``(match, uniform share, weighted share, effective worlds, moves this round)`` of
    every ``every``-th real choice of ``matches`` self-play matches (env ``m`` plays match ``m``
    of the batched engine's deals for ``seed``; only its first match counts)."""
    env = VectorEnv(matches, target=250, max_rounds=None, validate=False)
    env.reset(seed)
    history = RoundHistory(env)
    searcher = PolicySearchAgent(model, threads=None)  # its network and engine for the replays
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    choices = torch.zeros(matches, dtype=torch.long)
    rows = []
    while True:
        playing = env.state.matches == 0
        if not bool(playing.any()):
            return rows
        mask, observation = env.action_mask, env.observation
        choosing = playing & (layout.legal_counts(mask) > 1)
        choices += choosing
        measured = (choosing & (choices % every == 0)).nonzero()
        envs = measured.squeeze(1)
        if envs.numel():
            views = [decode(o) for o in observation[envs].numpy()]
            hands, turns = env.state.hands[envs].tolist(), env.state.turn[envs].tolist()
            worlds = [HandSampler(view).sample_many(rng, samples) for view in views]
            logl = play_log_likelihoods(searcher, history, env, envs, worlds)
            for e, view, hand, turn, world, row in zip(envs.tolist(), views, hands, turns,
                                                       worlds, logl):
                truth = [hand[(turn + k) & 3] for k in HIDDEN_SEATS]
                right = np.array([sum((w & t).bit_count() for w, t in zip(hidden, truth))
                                  for hidden in world]) / view.unseen.bit_count()
                weights = world_weights(row, power)
                rows.append((e, right.mean(), float(weights @ right),
                             1.0 / float(weights @ weights), int(history.length[e])))
        with torch.inference_mode():
            dist = MaskedCategorical(model(observation, mask)[0], mask)
            actions = dist.mode() if greedy else dist.sample(generator)
        env.step(actions)
        history.record(env, actions)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=arguments.int_in(1, 10_000), default=40)
    parser.add_argument("--samples", type=arguments.int_in(2, 4096), default=64)
    parser.add_argument("--seed", type=arguments.seed, default=5)
    parser.add_argument("--power", type=arguments.real_at_most(MAX_POWER), default=1.0)
    parser.add_argument("--greedy", action="store_true", help="the matches' seats play argmax")
    parser.add_argument("--every", type=arguments.int_in(1, 1000), default=5,
                        help="use every n-th decision")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = load_policy("shipped").model.eval()
    rows = measure(model, args.matches, args.samples, args.seed, args.power, args.greedy,
                   args.every)
    if not rows:
        print(f"error: no decision was measured in {args.matches} matches at --every "
              f"{args.every}: lower --every or play more --matches", file=sys.stderr)
        return 2
    match_of, uniform, weighted, ess, moves = (np.array(column) for column in zip(*rows))
    gain = weighted - uniform
    # a match's decisions share its deals and plays: the interval is over matches' mean gains
    per_match = [gain[match_of == m].mean() for m in sorted(set(match_of.tolist()))]
    # Student's t over the matches (the normal's 1.96 made it 3% too narrow at 40 matches,
    # 29% at 5); none under 4 matches, as the arena's margin interval
    interval = mean_interval(per_match)
    ci = "too few matches for a 95% CI" if interval is None else \
        f"95% CI +-{(interval[1] - interval[0]) / 2:.3f}"
    print(f"{len(rows)} decisions of {args.matches} self-play matches of the shipped policy "
          f"({'argmax' if args.greedy else 'sampled'} play), {args.samples} worlds each, "
          f"power {args.power:g}, seed {args.seed}\n")
    print("| worlds | hidden tiles placed with their true owner, mean | effective worlds, mean |")
    print("|---|---:|---:|")
    print(f"| uniform (the search's) | {uniform.mean():.3f} | {args.samples} |")
    print(f"| weighted by the other seats' plays this round | {weighted.mean():.3f} "
          f"| {ess.mean():.1f} |")
    print(f"\nweighted - uniform: mean {gain.mean():+.3f}; over the {len(per_match)} matches' "
          f"means {np.mean(per_match):+.3f} ({ci}); positive in "
          f"{np.mean(gain > 0):.0%} of the decisions; moves this round before the decision "
          f"(all seats, knocks included): {statistics.fmean(moves.tolist()):.1f} on average")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/inference_signal.py", main))
