"""The model card of a shipped policy, as Markdown: what ``training.ship`` writes beside the
policy (``MODEL_CARD.md``) from the card's JSON (``model_card.json``), and the quality bars it
judges the arena rows by (issue 4).  Only values the ship command checked reach it."""

from __future__ import annotations

import json
from pathlib import Path

from sevenrocks_env.agents import same_spec
from sevenrocks_env.checks import shown
from sevenrocks_env.fingerprints import is_pinned

from .checkpoint import minutes_text as checkpoint_minutes

#: Match win rates the shipped policy must reach (issue 4), by opponent.
QUALITY_BARS = {"random": 0.95, "greedy": 0.65, "heuristic": 0.55}


#: Duplicate pairs a bar must be measured over (issue 4).
BAR_PAIRS = 1000


def verdict(row: dict, bar: float) -> str:
    """Whether the arena row meets ``bar``: the point estimate decides, the interval qualifies."""
    if row["pairs"] < BAR_PAIRS:
        return f"not judged: {row['pairs']} pairs, the bar asks for >= {BAR_PAIRS}"
    if row["win_rate"] < bar:
        return "**not met**"
    if row["ci95"][0] < bar:
        return "met by the point estimate; the 95% CI reaches below the bar"
    return "met (the whole 95% CI is above the bar)"


def minutes_text(minutes) -> str:
    """A run's wall time as the messages write it (a tiny one's digits shown), or "unknown"."""
    return "unknown" if minutes is None else f"{checkpoint_minutes(minutes)} min"


def critic_text(config: dict) -> str:
    critic = config.get("critic", "shared")
    if critic == "oracle":
        return "oracle (sees all hands; training only: the shipped file has no value head)"
    return critic


def trained_by(config: dict) -> str:
    """How the run played (its config): self-play, or only against frozen opponents (a best
    response, ``opponent_fraction`` 1)."""
    opponents = run_opponents(config)
    if config.get("opponent_fraction", 0) >= 1 and opponents:
        return f"PPO policy trained against {', '.join(f'`{o}`' for o in opponents)} only"
    return "PPO self-play policy"


def run_opponents(config: dict) -> list:
    """A run config's ``opponents``: a list, or one spec (``opponents: greedy``), or none."""
    opponents = config.get("opponents") or []
    return [opponents] if isinstance(opponents, str) else opponents


def agreement_text(value) -> str:
    return "not measured" if value is None else f"{value:.3f}"


def options_text(settings: dict) -> str:
    """A round's student settings (``distill_record.SETTINGS``) but its init, as
    ``training.distill``'s options; ``""`` for a round from before they were kept."""
    hidden = settings.get("hidden_sizes")
    parts = [f"--hidden-sizes {' '.join(map(str, hidden))}"] if hidden else []
    for key in ("epochs", "batch_size", "learning_rate", "temperature", "seed"):
        if key in settings:  # (ints as they are: a large seed is no 1e+18)
            value = settings[key]
            text = repr(value)  # (every digit: :g kept six)
            parts.append(f"--{key.replace('_', '-')} {text}")
    return "".join(f" {part}" for part in parts)


def rounds_text(distill: dict) -> str:
    """The distillation row: each round, oldest first (``training.distill``), with the student's
    init and settings where the round kept them."""
    def one(r: dict) -> str:
        settings = r.get("settings", {})
        init = settings.get("init")
        if init is not None and not is_pinned(init):  # recorded before inits were pinned
            init += " (not pinned: the file that name held then)"
        init = f" from `{init}`" if init is not None else ""
        return (f"then fine-tuned{init} toward `{r['teacher']}` on {r['labels']:,} labels "
                f"(`training.distill{options_text(settings)}`; held-out agreement "
                f"{agreement_text(r['holdout_agreement'])})")
    return "; ".join(one(r) for r in [*distill.get("earlier", []), distill])


def threads_text(card: dict) -> str:
    """The training's torch threads, as the card says them (older cards: in ``machine``)."""
    threads = card.get("train_threads")
    return "" if threads is None else f" with {shown(threads)} torch thread" + \
        ("" if threads == 1 else "s")


def card_markdown(card: dict) -> str:
    lines = [f"# Model card: {card['file']}", "",
             f"A {trained_by(card['config'])} for Seven Rocks (one network for all four seats; "
             "seat-relative",
             f"observation layout v{card['obs_version']}). Load it with",
             "`sevenrocks_env.policy.load_policy(path)` or the agent spec `ckpt:PATH`.", "",
             "| | |", "|-|-|",
             f"| training decisions | {card['global_step']:,} |",
             *([f"| distillation | {rounds_text(card['distill'])} |"] if card.get("distill") else []),
             f"| training wall time | {minutes_text(card['train_minutes'])}{threads_text(card)}"
             + ("; the PPO run only, not the collection of the distillation's labels"
                if card.get("distill") else "") + " |",
             f"| network | MLP {card['model_config']['hidden_sizes']}, action features "
             f"v{int(card['model_config'].get('action_features', 0))}, "
             f"{card['model_config'].get('action_scorer', 'bilinear')} action scorer |",
             f"| critic (training only) | {critic_text(card['config'])} |",
             f"| file size | {card['file_bytes'] / 1e6:.2f} MB |",
             f"| arena played on | {card['machine']} (the ship run's machine) |", "",
             "## Arena results (" + ("batched arena, " if card.get("arena_kind") == "batched"
                                     else "") + "duplicate deals, policy plays greedily, 95% "
             "Wilson CI over pairs)",
             "", "| opponent | pairs | win rate | 95% CI | mean margin | rounds/match |",
             "|-|-:|-:|-:|-:|-:|"]
    for row in card["arena"]:
        source = f" (from `{Path(row['source']).name}`)" if row.get("source") else ""
        lines.append(f"| {row['opponent']}{source} | {row['pairs']} | {row['win_rate']:.3f} | "
                     f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}] | {row['mean_margin']:+.1f} | "
                     f"{row['rounds_per_match']:.2f} |")
    lines += ["", "## Against the project's quality bars (issue 4)", "",
              "| bar | measured | |", "|-|-|-|"]
    for row in card["arena"]:
        for name, bar in QUALITY_BARS.items():  # judged by the spec played, not by a name
            if not same_spec(row_spec(row), name):
                continue
            lines.append(f"| vs {name} >= {bar:.0%} | {row['win_rate']:.1%} "
                         f"[{row['ci95'][0]:.1%}, {row['ci95'][1]:.1%}], {row['pairs']} pairs "
                         f"| {verdict(row, bar)} |")
    if card.get("measured_after_shipping"):
        # results added by hand to model_card.json later (a re-ship starts without them)
        lines += ["", "## Measured after shipping", "", *card["measured_after_shipping"]]
    lines += ["", "## Commands", "", "```", *card["commands"], "```", "",
              "## Training config", "", "```json", json.dumps(card["config"], indent=1), "```", ""]
    return "\n".join(lines)


def row_spec(row: dict) -> str:
    """The spec a card's row played (a card from before rows said it: its opponent's)."""
    from sevenrocks_env.arena import split_name
    return row.get("spec") or split_name(row["opponent"])[1]


__all__ = ["BAR_PAIRS", "QUALITY_BARS", "agreement_text", "card_markdown", "critic_text",
           "minutes_text", "rounds_text", "row_spec", "run_opponents", "threads_text",
           "trained_by", "verdict"]
