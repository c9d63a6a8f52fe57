"""The ratings ladder (issue 11): chosen pairings in the batched arena, Bradley-Terry ratings.

    nice -n 5 .venv/bin/python benchmarks/ladder.py --seed 31337 --out runs/ladder \\
        --plot docs/ratings.png [--make-train checkpoints/<run>/latest.pt]

Every pairing is a batched-arena run (duplicate deals from ``--seed``, Wilson 95% interval over
pairs; ``sevenrocks_env.arena_batched``) -- except OpenSpiel's IS-MCTS (issue 13), which has no
batched form and plays in the process-pool arena (``sevenrocks_env.arena``, ``--workers``) -- saved
as ``<out>/<A>__<B>.json`` so an interrupted ladder resumes where it stopped (the default;
``--no-reuse`` plays every pairing again) and results measured elsewhere can be added as files
(``sevenrocks arena --json`` with the ladder's names, specs, seed and pairs:
``greedy=greedy random=random``; such a file is never replaced, ``--no-reuse`` is refused for
it, and a saved file that is not an arena result stops the ladder).  Not every
agent plays every other: the slow searchers play a few neighbours (``PAIRINGS``), which a
Bradley-Terry fit handles as long as the pairings connect all agents.
Ratings are on the Elo scale, centred on the mean of the largest group of agents that scored
against each other (:mod:`sevenrocks_env.ratings`), with ±1.96 standard errors
(:func:`sevenrocks_env.ratings.fit_bradley_terry`); an agent that won every pair or lost every
one has the rating the fit's prior gives it, marked ``>=`` or ``<=`` (it is only known to lie
above, or below, all it met).  The last column is each agent's
lead over the next one down with the 95% interval of that *difference* (what says whether two
neighbours differ; narrower than the two ratings' own intervals suggest).  The plot is
matplotlib with the ratings' intervals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from sevenrocks_env import arguments
from sevenrocks_env.agents import same_spec
from sevenrocks_env.checks import shown
from sevenrocks_env.arena import DEFAULT_MAX_ROUNDS as MAX_ROUNDS  # every pairing's limit
from sevenrocks_env.rules import DEFAULT_TARGET
from sevenrocks_env.atomic_file import atomic_path
from sevenrocks_env.machine import machine_text

#: name -> agent spec
AGENTS = {
    "random": "random",
    "greedy": "greedy",
    "heuristic": "heuristic",
    "search16": "search:samples=16",
    "search64": "search:samples=64",
    "search256": "search:samples=256",
    "shipped": "ckpt:shipped",
    # the policy shipped before 2026-12-03, with which the README's ladder was measured
    "previous_v2": "ckpt:checkpoints/previous/v2_oracle/sevenrocks_ppo.pt",
    "shipped+search": "search:policy=shipped,samples=64",
    # the same search with its worlds weighted by the other seats' plays (agents.inference)
    "shipped+inference": "search:policy=shipped,samples=64,inference=0.5",
    "ismcts100": "openspiel:ismcts:sims=100",
    "ismcts400": "openspiel:ismcts:sims=400",
    "ismcts1600": "openspiel:ismcts:sims=1600",
}

#: (A, B, pairs): cheap pairings get many pairs, the slow searchers a few neighbours
PAIRINGS = [
    ("greedy", "random", 200), ("heuristic", "random", 200), ("heuristic", "greedy", 500),
    ("shipped", "greedy", 1000), ("shipped", "heuristic", 1000),
    ("shipped", "previous_v2", 1000),
    ("search16", "greedy", 200), ("search16", "heuristic", 200), ("search64", "search16", 100),
    ("search64", "greedy", 200), ("search64", "heuristic", 200), ("shipped", "search64", 500),
    ("search256", "search64", 50), ("shipped+search", "search64", 200),
    ("shipped+search", "shipped", 50),
    ("shipped+inference", "search64", 200), ("shipped+inference", "shipped+search", 50),
    ("shipped+inference", "shipped", 50),
    # OpenSpiel's IS-MCTS: 400 simulations is the largest setting under 0.5 s a decision here
    ("shipped", "ismcts400", 100), ("ismcts100", "greedy", 40), ("ismcts100", "heuristic", 40),
    ("ismcts400", "ismcts100", 20), ("ismcts400", "heuristic", 20), ("ismcts1600", "ismcts400", 5),
]
#: with ``--make-train PATH``: the policy ``make train`` wrote (issue 11's "make train" bar)
MAKE_TRAIN_PAIRINGS = [("make_train", "heuristic", 1000), ("make_train", "shipped", 200)]


class SavedError(ValueError):
    """A saved pairing file that cannot be used (its path and why)."""


#: Keys a saved pairing carries since 2026-12-05 (the ladder's older files lack them).
_NEWER_KEYS = ("max_rounds", "engine")


def _engine(spec_a: str, spec_b: str) -> str:
    """Which arena plays a pairing, so which deals it sees: OpenSpiel's IS-MCTS has no batched
    form and plays in the process-pool arena (``python``); every other pairing ``batched``."""
    return "python" if any(spec.startswith("openspiel:") for spec in (spec_a, spec_b)) \
        else "batched"


def _engine_kind(engine) -> str | None:
    """``python`` or ``batched`` from a result's ``engine`` (``batched:cuda`` deals as on the
    CPU); None for anything else."""
    return engine.partition(":")[0] if isinstance(engine, str) else None


def fits(saved: dict, wanted: dict) -> bool:
    """Whether a saved pairing was played with every setting in ``wanted``: the specs compared
    as agents (:func:`same_spec`), the arena by its kind (:func:`_engine_kind`)."""
    def same(key, value):
        if key in ("spec_a", "spec_b"):
            return same_spec(saved.get(key), value)
        return (_engine_kind(saved.get(key)) if key == "engine" else saved.get(key)) == value
    return all(same(key, value) for key, value in wanted.items())


def read_saved(path: Path) -> dict:
    """A saved pairing (:func:`sevenrocks_env.arena_report.read_result`; ``wall_s`` and
    ``files`` too when the ladder wrote it): :class:`SavedError` for a file cut short by an
    interrupted write, or edited."""
    from sevenrocks_env.arena_report import read_result

    try:
        return read_result(path)
    except ValueError as error:
        raise SavedError(str(error)) from None


def play(a: str, b: str, pairs: int, seed: int, out: Path, reuse: bool, workers: int = 1,
         agents: dict | None = None, device: str = "cpu", batch: int = 256) -> dict:
    """Agent ``a`` against ``b`` (names in ``agents``, default :data:`AGENTS`), or its saved
    file when that was played with the same specs, deal seed, number of pairs, target, round
    limit and arena (:func:`_engine`: which deals), and the files the specs load still hold
    what they held (a file from another --seed, --scale or
    --make-train checkpoint is played again and replaced).  A file the ladder did not write (an
    arena's ``--json`` output: no ``files`` key) is reused when its specs load no file, and is
    never replaced: :class:`SavedError` if it does not fit.  ``device`` and ``batch`` (pairs
    played together) are the batched arena's; they change the speed, not the deals."""
    from sevenrocks_env.fingerprints import files_fingerprint

    path = out / f"{a}__{b}.json"
    agents = AGENTS if agents is None else agents
    files = [files_fingerprint(agents[a]), files_fingerprint(agents[b])]  # a ckpt: retrained
    if reuse and path.exists():
        saved = read_saved(path)
        ours = "files" in saved
        wanted = {"agent_a": a, "agent_b": b, "spec_a": agents[a], "spec_b": agents[b],
                  "seed": seed, "pairs": pairs, "target": DEFAULT_TARGET, "files": files,
                  "max_rounds": MAX_ROUNDS, "engine": _engine(agents[a], agents[b])}
        if not ours and not any(files):  # an arena's --json: nothing to fingerprint
            wanted.pop("files")
        if ours:  # the ladder's files from before these keys were played with these settings
            wanted = {k: v for k, v in wanted.items() if k in saved or k not in _NEWER_KEYS}
        if fits(saved, wanted):
            saved.setdefault("wall_s", 0.0)
            return saved
        if not ours:
            raise SavedError(f"{path}: not written by the ladder, and not a result of "
                             f"{a}={agents[a]} against {b}={agents[b]}, {pairs} pairs, seed "
                             f"{seed}, target {DEFAULT_TARGET}, max_rounds {MAX_ROUNDS} on the "
                             f"{wanted['engine']} arena"
                             + (" (nor can it say which weights its checkpoints held)"
                                if any(files) else "") + ": move it away to play the pairing")
        print(f"({path.name}: saved with other settings; playing it again)", file=sys.stderr)
    elif path.exists() and "files" not in read_saved(path):  # --no-reuse: still never replaced
        raise SavedError(f"{path}: not written by the ladder (an arena result added by hand), "
                         "and --no-reuse would replace it: move it away to play the pairing")
    spec_a, spec_b = f"{a}={agents[a]}", f"{b}={agents[b]}"
    started = time.perf_counter()
    if _engine(agents[a], agents[b]) == "python":
        from sevenrocks_env.arena import evaluate
        result = evaluate(spec_a, spec_b, pairs, seed=seed, workers=workers, progress=True,
                          max_rounds=MAX_ROUNDS)
    else:
        from sevenrocks_env.arena_batched import evaluate_batched
        result = evaluate_batched(spec_a, spec_b, pairs, seed=seed, batch=min(pairs, batch),
                                  workers=workers, device=device, max_rounds=MAX_ROUNDS)
    data = result.as_dict()
    data["wall_s"] = time.perf_counter() - started
    data["files"] = files
    with atomic_path(path) as partial:  # an interrupted write never leaves half a file
        partial.write_text(json.dumps(data, indent=1))
    return data


def check_agents(pairings, agents: dict, out: Path | None) -> str | None:
    """Why an agent the ``pairings`` will play cannot be built (a checkpoint missing, cut short
    or not a checkpoint, OpenSpiel not installed), naming it; None if every one builds.  Each
    is built once, before the first pairing: the pairings are played in order, and one that
    failed only when its turn came ended the ladder in a traceback after hours of play.  With
    ``out`` (``--reuse``), an agent whose every pairing is saved there is read, not played,
    and not built."""
    from sevenrocks_env.agents import make_agent

    playing = [name for a, b, _ in pairings for name in (a, b)
               if out is None or not (out / f"{a}__{b}.json").exists()]
    for name in dict.fromkeys(playing):
        try:
            make_agent(agents[name])
        except ValueError as error:
            return f"agent {name} ({agents[name]}): {error}"
    return None


def ratings(results: list[dict]) -> list[dict]:
    """The fitted ratings, best first, each row with ``lead`` (over the next row: the difference
    and its standard error; None on the last row)."""
    from sevenrocks_env.ratings import fit_bradley_terry
    names = list(dict.fromkeys(n for r in results for n in (r["agent_a"], r["agent_b"])))
    table = {}
    for r in results:
        i, j = names.index(r["agent_a"]), names.index(r["agent_b"])
        table[(i, j)] = (r["win_rate"] * r["pairs"], r["pairs"])
    fitted = fit_bradley_terry(names, table)
    order = sorted(range(len(names)), key=lambda i: -fitted.rating[i])
    rows = fitted.rows()
    for above, below in zip(order, order[1:] + [None]):
        rows[above]["lead"] = None if below is None else fitted.difference(above, below)
    return [rows[i] for i in order]


def plot(rated: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sevenrocks_env.arena_report import centre_text
    from training.plot_curve import _text
    rated = rated[::-1]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rated) + 1.2))
    ys = range(len(rated))
    measured = [(y, r) for y, r in zip(ys, rated) if not r["one_sided"]]
    ax.errorbar([r["rating"] for _, r in measured], [y for y, _ in measured],
                xerr=[1.96 * r["stderr"] for _, r in measured], fmt="o", capsize=4)
    for y, r in zip(ys, rated):  # only known to lie below (above) all it met: an arrow that way
        if r["one_sided"]:
            side = r["one_sided"].split()[0]  # won / lost / between (groups)
            ax.plot(r["rating"], y, {"lost": "<", "won": ">"}.get(side, "D"), color="grey",
                    markersize=9)
    ax.set_yticks(list(ys), [_text(r["agent"]) for r in rated])  # ($: not mathtext)
    ax.set_xlabel(f"Bradley-Terry rating (Elo scale), 95% interval\n{centre_text(rated)}")
    ax.set_title("Seven Rocks ratings ladder (arena, duplicate deals)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as partial:
        fig.savefig(partial, dpi=110, format=arguments.picture_format(path))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=arguments.seed, default=31337,
                        help="the deal seed of every pairing (default: %(default)s)")
    parser.add_argument("--out", type=arguments.output_folder, default="runs/ladder",
                        help="the folder of the pairings' result files (default: %(default)s)")
    parser.add_argument("--scale", type=arguments.real_at_most(1000.0), default=1.0,
                        help="multiply every pairing's pairs (e.g. 0.1 for a quick look)")
    parser.add_argument("--no-reuse", dest="reuse", action="store_false",
                        help="play every pairing again (by default a pairing saved in --out "
                             "with the same specs, seed and pairs is read, not played)")
    parser.add_argument("--only", nargs="*", help="play only pairings that involve these agents")
    parser.add_argument("--skip", nargs="*", default=[],
                        help="leave out pairings that involve these agents (e.g. the IS-MCTS "
                             "bots, which take hours)")
    parser.add_argument("--plot", type=arguments.picture_file,
                        help="write the ratings plot here (.png, .svg or .pdf, as its suffix says)")
    parser.add_argument("--make-train", metavar="PATH",
                        help="also rate this checkpoint as make_train "
                             "(e.g. checkpoints/<run>/latest.pt)")
    parser.add_argument("--workers", type=arguments.workers, default=1,
                        help="processes for every pairing (the batched ones split their "
                             "pairs into spans, one a process)")
    parser.add_argument("--device", type=arguments.device, default="cpu",
                        help="the batched arena's device (cuda: one process, --workers 1)")
    parser.add_argument("--batch", type=arguments.batch, default=256,
                        help="pairs the batched arena plays together (more on a GPU)")
    parser.add_argument("--no-play", action="store_true",
                        help="only the pairings already saved under --out (ratings and plot)")
    args = parser.parse_args(argv)
    if args.device != "cpu" and args.workers > 1:
        parser.error(f"--workers {args.workers} play on the CPU; on {args.device} use one")
    agents, pairings = dict(AGENTS), list(PAIRINGS)
    if args.make_train:
        agents["make_train"] = f"ckpt:{args.make_train}"
        pairings += MAKE_TRAIN_PAIRINGS
    unknown = sorted(set(args.only or []).union(args.skip) - set(agents))
    if unknown:
        parser.error(f"no agent {', '.join(unknown)} in the ladder (its agents: "
                     f"{', '.join(agents)})")
    if args.make_train:  # before the first pairing (it failed after hours of play)
        from sevenrocks_env.fingerprints import files_fingerprint
        try:
            files_fingerprint(agents["make_train"])
        except ValueError as error:
            parser.error(str(error))
    pairings = [(a, b, pairs) for a, b, pairs in pairings
                if not ((args.only and a not in args.only and b not in args.only)
                        or {a, b} & set(args.skip))]
    out = Path(args.out)
    if not args.no_play:
        problem = check_agents(pairings, agents, out if args.reuse else None)
        if problem:
            parser.error(problem)
    out.mkdir(parents=True, exist_ok=True)
    import torch
    torch.set_num_threads(1)
    results = []
    print(f"{machine_text(with_torch=True)}")
    print(f"deal seed {args.seed}, pairs x {args.scale:g} (--scale)"
          + ("; --no-play: the saved results, each with its own seed and pairs (above each "
             "mismatch on stderr)" if args.no_play else "") + "\n")
    print("| A | B | pairs | A's win rate [95% CI] | mean margin | ms/decision A / B "
          "(wall; CPU) | wall s |")
    print("|---|---|---:|---|---:|---|---:|")
    for a, b, pairs in pairings:
        saved = out / f"{a}__{b}.json"
        try:
            if args.no_play:  # whatever was saved, with its own seed and pairs (printed)
                if not saved.exists():
                    continue
                r = read_saved(saved)
                arena = _engine(agents[a], agents[b])
                played = {"max_rounds": MAX_ROUNDS, "engine": arena, **r}  # (older files)
                if not fits(played, {"spec_a": agents[a], "spec_b": agents[b], "seed": args.seed,
                                     "max_rounds": MAX_ROUNDS, "engine": arena}):
                    print(f"({saved.name}: {r['spec_a']} against {r['spec_b']}, seed "
                          f"{r['seed']}, max_rounds {played['max_rounds']} on the "
                          f"{_engine_kind(played['engine'])} arena: not "
                          "this ladder's specs, --seed, round limit or arena)", file=sys.stderr)
            else:
                r = play(a, b, max(1, round(pairs * args.scale)), args.seed, out, args.reuse,
                         args.workers, agents, args.device, args.batch)
            if (r["agent_a"], r["agent_b"]) != (a, b):  # the fit rates the file's names
                raise SavedError(f"{saved}: a result of {shown(r['agent_a'])} against "
                                 f"{shown(r['agent_b'])}, not of {a} against {b} as its name "
                                 "says: move it away")
        except SavedError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except ValueError as error:  # an agent that cannot be built after all (a saved file of
            print(f"error: {a} against {b}: {error}", file=sys.stderr)  # other settings)
            return 2
        results.append(r)
        ms = " / ".join(f"{1000 * s:.1f}" for s in r["seconds_per_decision"])
        if "cpu_seconds_per_decision" in r:  # (pairings saved before CPU time was kept: wall only)
            ms += "; " + " / ".join(f"{1000 * s:.1f}" for s in r["cpu_seconds_per_decision"])
        print(f"| {a} | {b} | {r['pairs']} | {r['win_rate']:.3f} [{r['ci95'][0]:.3f}, "
              f"{r['ci95'][1]:.3f}] | {r['mean_margin']:+.1f} | {ms} | "
              f"{r.get('wall_s', 0):.0f} |",
              flush=True)
    if not results:
        print(f"error: no pairing played or saved under {out} (see --only, --skip, --no-play)",
              file=sys.stderr)
        return 2
    try:
        rated = ratings(results)
    except ValueError as problem:  # --only can leave groups that never met
        print(f"error: {problem} (choose --only/--skip agents whose pairings connect)",
              file=sys.stderr)
        return 2
    from sevenrocks_env.arena_report import rating_text
    print("\n| agent | rating | ±95% | lead over the next one down, ±95% |\n|---|---:|---:|---:|")
    for r, below in zip(rated, rated[1:] + [None]):
        lead = "" if below is None else f"{r['lead'][0]:+.0f} ± {1.96 * r['lead'][1]:.0f}"
        if below is not None and r["group"] != below["group"]:
            lead = "prior"  # two groups the data do not connect (ratings.py): the prior's gap
        spread = "prior" if r["one_sided"] else f"{1.96 * r['stderr']:.0f}"
        print(f"| {r['agent']} | {rating_text(r)} | {spread} | {lead} |")
    one_sided = [f"{r['agent']} ({r['one_sided']})" for r in rated if r["one_sided"]]
    if one_sided:
        others = ("; the others are centred on their own mean"
                  if len(one_sided) < len(rated) else "")
        print(f"\n{', '.join(one_sided)}: rating set by the fit's prior (one drawn pair a "
              f"pairing), not measured{others}")
    if args.plot:
        plot(rated, args.plot)
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/ladder.py", main))
