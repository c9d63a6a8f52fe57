"""What better inference could be worth to the policy-guided search: an upper bound.

    nice -n 5 .venv/bin/python benchmarks/oracle_search.py --pairs 200 --seed 777 [--samples 64]

``search:policy=shipped`` draws its worlds uniformly among the deals consistent with what the seat
has seen (tile counts, knocks: ``agents.belief.HandSampler``).  The one idea left to make it
stronger is inference: weighting the worlds by how likely the other seats' plays were in each
(PIMC with inference, as bridge and Skat programs do).  However good, such a weighting can only
move the worlds toward the real deal.  So this script plays an **oracle** -- the same search,
network, prior and rollouts, given one world, the real one (the true hidden hands) -- in the
batched arena (duplicate deals, Wilson 95% intervals over pairs) against:

* the normal search with ``--samples`` worlds: the oracle's lead bounds what any world weighting
  could add to it (the real deal says more than any posterior over deals);
* ``search`` with 64 samples (issue 11's bar for the policy with search is 65% against it).

The oracle sees hidden hands, so it is not an agent anyone can play: it lives in this script.
Its rollouts past the round (near the target) use one deal stream, where the normal search
averages ``samples``.  Prints a markdown table and the seed.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from sevenrocks_env import arguments
from sevenrocks_env.agents.belief import HIDDEN_SEATS, MAX_WORLDS
from sevenrocks_env.agents.layout import best_action, legal_from_mask
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.world_rollouts import Decision
from sevenrocks_env.arena_batched import evaluate_batched
from sevenrocks_env.machine import machine_text
from sevenrocks_env.batched_agents import BatchedAgent
from sevenrocks_env.observation import decode
from sevenrocks_env.rules import DEFAULT_TARGET

_ORACLE_SALT = 0x0AC1E


class OracleSearch(BatchedAgent):
    """``search:policy`` scoring each decision's actions in the real world alone."""

    def __init__(self, agent: PolicySearchAgent):
        self.agent, self.name = agent, "oracle"

    def actions(self, env, envs, context):
        observations = env.observation[envs].cpu().numpy()
        masks = env.action_mask[envs].cpu().numpy()
        seats = env.current_seat[envs].tolist()
        hands = env.state.hands[envs].tolist()
        keys = zip(context["coordinate"][envs].tolist(), context["moves"][envs].tolist())
        decisions = []
        for observation, mask, seat, hand, key in zip(observations, masks, seats, hands, keys):
            view = decode(observation)
            truth = tuple(hand[(seat + k) & 3] for k in HIDDEN_SEATS)  # relative seats 1, 2, 3
            assert truth[0] | truth[1] | truth[2] == view.unseen and all(
                hand.bit_count() == view.tile_counts[k] for hand, k in zip(truth, HIDDEN_SEATS))
            stream = int(np.random.default_rng((context["seed"], _ORACLE_SALT, *key))
                         .integers(1 << 40))
            decisions.append(Decision(view, legal_from_mask(mask), [truth], [stream],
                                      self.agent.rounds(view)))
        scores = self.agent.scores(observations, masks, decisions)
        chosen = [best_action(legal_from_mask(mask), score) for mask, score in zip(masks, scores)]
        return torch.tensor(chosen, dtype=torch.long, device=envs.device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=arguments.pairs, default=200)
    parser.add_argument("--seed", type=arguments.seed, default=777, help="deal seed")
    parser.add_argument("--samples", type=arguments.int_in(1, MAX_WORLDS), default=64,
                        help="worlds of the normal search")
    parser.add_argument("--target", type=arguments.int_in(1, 5000), default=DEFAULT_TARGET)
    parser.add_argument("--batch", type=arguments.batch, default=256)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    searcher = PolicySearchAgent("shipped", samples=args.samples)
    opponents = [(f"search:policy=shipped,samples={args.samples}", searcher),
                 ("search:samples=64", "search:samples=64")]
    print(f"oracle = search:policy=shipped given the true hidden hands (one world); deal seed "
          f"{args.seed}, {args.pairs} pairs, target {args.target}; "
          f"{machine_text(with_torch=True)}\n")
    print("| oracle against | pairs | oracle's win rate [95% CI] | mean margin | wall s |")
    print("|---|---:|---|---:|---:|")
    for label, opponent in opponents:
        started = time.perf_counter()
        result = evaluate_batched(OracleSearch(searcher), opponent, args.pairs, seed=args.seed,
                                  target=args.target, batch=args.batch)
        low, high = result.ci95
        print(f"| {label} | {result.pairs} | {result.win_rate:.3f} [{low:.3f}, {high:.3f}] | "
              f"{result.mean_margin:+.1f} | {time.perf_counter() - started:.0f} |", flush=True)
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/oracle_search.py", main))
