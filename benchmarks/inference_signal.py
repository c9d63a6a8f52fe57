"""How much the other seats' plays say about their hands: uniform worlds against worlds weighted
by the policy's likelihood of those plays (the inference a search could add).

    .venv/bin/python benchmarks/inference_signal.py --matches 40 --samples 64 --seed 5

The search samples its worlds uniformly among the deals consistent with the tile counts and
knocks (``agents.belief.HandSampler``).  A world in which the other seats' plays this round were
likely under the policy is more likely to be the real deal, if the seats play like the policy.
For decisions of matches the shipped policy plays against itself (sampling from its
distribution, ``--greedy`` for its most probable move), this script samples ``--samples`` worlds
for the seat on turn, replays the round from its start in each world (the world's hands now,
plus what each seat has played this round) and weights the world by the product of the policy's
probabilities of the three other seats' real choices this round (``--power`` < 1 tempers it).
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

from sevenrocks_env import arguments, rules
from sevenrocks_env.agents.belief import HIDDEN_SEATS, HandSampler
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.observation import action_mask, encode
from sevenrocks_env.policy import MaskedCategorical, load_policy


def play_match(model, seed: int, greedy: bool, generator):
    """``[(round start Match, [(seat, action, legal count)], Match before the action)]``: every
    decision of one self-play match, with the round it belongs to."""
    match = rules.Match.new(seed)
    round_start, played, decisions = match.clone(), [], []
    while not match.over:
        seat = match.turn
        legal = rules.legal_actions(match)
        if len(legal) > 1:
            obs = torch.as_tensor(encode(match, seat))[None]
            mask = torch.as_tensor(action_mask(match, seat), dtype=torch.bool)[None]
            dist = MaskedCategorical(model(obs, mask)[0], mask)
            action = int(dist.mode() if greedy else dist.sample(generator))
            decisions.append((round_start, list(played), match.clone()))
        else:
            action = legal[0]
        before = match.round_index
        rules.apply_action(match, action)
        played.append((seat, action, len(legal)))
        if match.round_index != before:
            round_start, played = match.clone(), []
    return decisions


def world_round_start(round_start, now, world) -> rules.Match:
    """The round's start with the hidden seats' hands of ``world`` (their hands now, in the
    observer's frame, plus what each has played this round)."""
    state = round_start.to_state()
    hands = list(state["hands"])
    for k, hand in zip(HIDDEN_SEATS, world):
        seat = (now.turn + k) & 3
        hands[seat] = hand | now.played_by[seat]
    state["hands"] = hands
    return rules.Match.from_state(state)


def world_log_likelihoods(model, round_start, played, now, worlds, power: float):
    """Per world, ``power`` x the log-probability of the hidden seats' real choices this round."""
    observer = now.turn
    rows, owners = [], []
    for w, world in enumerate(worlds):
        replay = world_round_start(round_start, now, world)
        for seat, action, legal in played:
            if seat != observer and legal > 1:
                rows.append((encode(replay, seat), action_mask(replay, seat), action))
                owners.append(w)
            rules.apply_action(replay, action)
    logl = np.zeros(len(worlds))
    if rows:
        obs = torch.as_tensor(np.stack([r[0] for r in rows]))
        mask = torch.as_tensor(np.stack([r[1] for r in rows]), dtype=torch.bool)
        with torch.inference_mode():
            log_probs = MaskedCategorical(model(obs, mask)[0], mask).log_probs
        chosen = log_probs[torch.arange(len(rows)), torch.tensor([r[2] for r in rows])]
        np.add.at(logl, np.array(owners), power * chosen.double().numpy())
    return logl


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=arguments.int_in(1, 10_000), default=40)
    parser.add_argument("--samples", type=arguments.int_in(2, 4096), default=64)
    parser.add_argument("--seed", type=arguments.seed, default=5)
    parser.add_argument("--power", type=arguments.positive_real, default=1.0)
    parser.add_argument("--greedy", action="store_true", help="the matches' seats play argmax")
    parser.add_argument("--every", type=arguments.int_in(1, 1000), default=5,
                        help="use every n-th decision")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = load_policy("shipped").model.eval()
    generator = torch.Generator().manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    uniform, weighted, ess, plays, match_of = [], [], [], [], []
    for m in range(args.matches):
        with torch.inference_mode():
            decisions = play_match(model, args.seed * 100_003 + m, args.greedy, generator)
        for round_start, played, now in decisions[::args.every]:
            view = view_of(now, now.turn)
            truth = [now.hands[(now.turn + k) & 3] for k in HIDDEN_SEATS]
            unseen = view.unseen.bit_count()
            if not unseen:
                continue
            worlds = HandSampler(view).sample_many(rng, args.samples)
            right = np.array([sum((w & t).bit_count() for w, t in zip(world, truth)) / unseen
                              for world in worlds])
            logl = world_log_likelihoods(model, round_start, played, now, worlds, args.power)
            weights = np.exp(logl - logl.max())
            weights /= weights.sum()
            uniform.append(right.mean())
            weighted.append(float(weights @ right))
            ess.append(1.0 / float(weights @ weights))
            plays.append(sum(1 for seat, _, legal in played if seat != now.turn and legal > 1))
            match_of.append(m)
    n = len(uniform)
    gain = np.array(weighted) - np.array(uniform)
    # a match's decisions share its deals and plays: the interval is over matches' mean gains
    per_match = [gain[np.array(match_of) == m].mean() for m in sorted(set(match_of))]
    half = 1.96 * np.std(per_match, ddof=1) / len(per_match) ** 0.5 if len(per_match) > 1 \
        else float("nan")
    print(f"{n} decisions of {args.matches} self-play matches of the shipped policy "
          f"({'argmax' if args.greedy else 'sampled'} play), {args.samples} worlds each, "
          f"power {args.power:g}, seed {args.seed}\n")
    print("| worlds | hidden tiles placed with their true owner, mean | effective worlds, mean |")
    print("|---|---:|---:|")
    print(f"| uniform (the search's) | {statistics.fmean(uniform):.3f} | {args.samples} |")
    print(f"| weighted by the other seats' plays this round | {statistics.fmean(weighted):.3f} "
          f"| {statistics.fmean(ess):.1f} |")
    print(f"\nweighted - uniform: mean {gain.mean():+.3f}; over the {len(per_match)} matches' "
          f"means {np.mean(per_match):+.3f} (95% CI +-{half:.3f}); positive in "
          f"{np.mean(gain > 0):.0%} of the decisions; the other seats' real choices this round: "
          f"{statistics.fmean(plays):.1f} a decision on average")
    return 0


if __name__ == "__main__":
    sys.exit(main())
