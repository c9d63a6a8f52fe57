"""Ship a trained policy: export it small, measure it in the arena, write its model card.

    python -m training.ship checkpoints/<run>/latest.pt --out checkpoints/shipped/sevenrocks_ppo.pt \\
        --pairs 1000 --search-pairs 500

Writes the policy-only checkpoint (no optimizer or run state), then ``model_card.json`` and
``MODEL_CARD.md`` beside it: the training config, steps and wall time, and the arena results
(duplicate deals, 95% CIs) against the baselines.  The arena is the batched one
(:func:`~sevenrocks_env.arena_batched.evaluate_batched`: every pair stepped together, ``search``
too); ``--arena pool`` plays one match at a time in ``--workers`` processes, for opponents
without a batched form.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from sevenrocks_env import arguments
from sevenrocks_env.arena_report import (CARD_TEXT, MAX_CARD_NAME, MAX_CARD_SPEC, arena_command,
                                         is_card_text)
from sevenrocks_env.arena_report import read_policy_result as read_result
from sevenrocks_env.atomic_file import check_output_file
from sevenrocks_env.checks import shown
from sevenrocks_env.driver import AgentError
from sevenrocks_env.observation import OBS_VERSION
from sevenrocks_env.policy import CheckpointError, build_model, read_checkpoint
from sevenrocks_env.textfile import read_text

from .checkpoint import export_policy, policy_only, run_facts
from .config import OUTPUT_FOLDERS, load_config
from .config_yaml import PACKAGED_CONFIGS
from .distill_record import distill_facts
from .model_card import BAR_PAIRS, QUALITY_BARS, card_markdown, run_opponents
from .resume_record import resumes_of, resumes_text


def _row(opponent: str, result) -> dict:
    """A row of the card's arena table: ``opponent`` as named (``name=spec`` or a spec), the
    spec it played (``spec``: what the quality bars are judged by).  The win rate and its
    interval are kept unrounded: the card's Markdown rounds them once, as the arena prints them
    (rounded here first, 0.98947 became 0.9895 and then 0.990 where the arena said 0.989)."""
    lo, hi = result.ci95
    return {"opponent": opponent, "spec": result.spec_b, "pairs": result.pairs,
            "matches": result.matches, "win_rate": float(result.win_rate),
            "ci95": [float(lo), float(hi)],
            "mean_margin": round(result.mean_margin, 1),
            "rounds_per_match": round(result.rounds_per_match, 2), "seed": result.seed,
            "ms_per_decision_policy": round(1e3 * result.seconds_per_decision[0], 3)}


def same_policy(spec: str, exported: dict) -> bool:
    """Whether the ``ckpt:`` (or ``policy:``) policy ``spec`` has the weights of ``exported`` (a policy-only
    checkpoint dict, :func:`~training.checkpoint.policy_only`): the policy itself or a file
    holding it, such as its training checkpoint."""
    try:
        other = read_checkpoint(spec.partition(":")[2].strip())
    except CheckpointError:
        return False
    mine, theirs = exported["model"], other.get("model", {})
    return mine.keys() <= theirs.keys() and all(
        isinstance(theirs[k], torch.Tensor) and (theirs[k].shape, theirs[k].dtype)
        == (mine[k].shape, mine[k].dtype) and torch.equal(mine[k], theirs[k]) for k in mine)


def _arena(args, agents: list[str]):
    """``play(spec, agent, pairs) -> ArenaResult`` in the arena ``args.arena`` names; with the
    batched arena every agent must have a batched form (``ValueError`` naming it, before any
    file is written)."""
    from sevenrocks_env.arena import evaluate, split_name  # (numbers: argparse types)
    if args.arena == "pool":
        return lambda spec, agent, pairs: evaluate(spec, agent, pairs, seed=args.seed,
                                                   workers=args.workers, progress=True)
    if args.workers != 1:
        raise ValueError("--workers is an option of --arena pool; the batched arena runs in "
                         "one process")
    from sevenrocks_env.arena_batched import evaluate_batched
    from sevenrocks_env.batched_agents import batched_agent
    for agent in agents:
        try:
            batched_agent(split_name(agent)[1])
        except ValueError as error:
            hint = "; ship with --arena pool" if "batched" in str(error) else ""
            raise ValueError(f"opponent {shown(agent)}: {error}{hint}") from None
    return lambda spec, agent, pairs: evaluate_batched(spec, agent, pairs, seed=args.seed,
                                                       batch=min(pairs, 256), progress=True)


def _check_config(data: dict, path, distilled: bool, writes_command: bool = True) -> None:
    """:class:`CheckpointError` naming the file and field when its run's ``config`` (checked
    by :func:`run_facts` as JSON; absent: ``{}``) is not a valid training config (as
    ``--resume`` reads it; its agents are not made), describes another network than its
    weights (a distilled one's layers may be wider), or holds an opponent that is not
    :data:`~sevenrocks_env.arena_report.CARD_TEXT` (the card's Markdown names them), or, when
    the card's training command is written from it (``writes_command``: no ``--train-command``),
    a text value (``init_from``) that command could not hold: more than one line, or a
    backtick."""
    from .config import ConfigError, config_from_dict
    from .resume import network_disagreement, saved_values
    saved = data.get("config") or {}
    if not saved:
        return
    try:
        cfg = config_from_dict(saved_values(data), f"{path}: 'config'", agents=False)
    except ConfigError as error:
        raise CheckpointError(str(error)[:400]) from None
    for key, value in saved_values(data).items() if writes_command else ():
        if isinstance(value, str) and key not in _NOT_LEARNING and not _command_text(value):
            raise CheckpointError(f"{path}: 'config' {key}: {shown(value)} must be {COMMAND_TEXT}"
                                  " to go into the model card's training command (or give the "
                                  "command: --train-command)")
    resumed = resumes_text(resumes_of(data, path))  # (a record that is not one: refused)
    if writes_command and not _command_text(resumed):
        raise CheckpointError(f"{path}: 'resumes' in words, {shown(resumed)}, must be "
                              f"{COMMAND_TEXT} (or give the command: --train-command)")
    problem = network_disagreement(saved, cfg, data["model_config"], widened=distilled)
    if problem:
        raise CheckpointError(f"{path}: 'config' {problem}")
    for opponent in run_opponents(saved):  # as the file has them (the config strips spaces)
        if not is_card_text(opponent, MAX_CARD_SPEC):
            raise CheckpointError(f"{path}: 'config' opponents: {shown(opponent)} must be "
                                  f"{CARD_TEXT} (it goes into the model card)")


#: What the card's training command (``--train-command``, or a config's text values) may hold.
COMMAND_TEXT = "one line of at most 4096 printable characters, without `"


def _command_text(text: str) -> bool:
    """Whether ``text`` is :data:`COMMAND_TEXT` (the card shows it in a Markdown code block)."""
    return text.isprintable() and len(text) <= 4096 and "`" not in text


#: ``make train``'s config, against which a run's config is written as ``--set`` values.
DEFAULT_CONFIG = PACKAGED_CONFIGS["default"]
#: Config keys that do not change what a run learns: where it writes, how it reports.
_NOT_LEARNING = ("run_name", "progress", *OUTPUT_FOLDERS)


def training_command(data: dict, distilled: bool) -> str:
    """The command that trains the run of checkpoint ``data`` (its config checked by
    :func:`_check_config`, read as ``--resume`` reads it: an older run's missing fields are
    that run's defaults): ``make train`` for ``configs/default.yaml``'s values, else that file
    with ``--set`` for each value that differs (keys that only name outputs or progress left
    out); a distilled policy's rounds of ``training.distill`` are named after it (the card's
    ``distill`` facts), and a run resumed with other learning settings says so, each resume's
    step and changes (:mod:`.resume_record`).  Without a config, or without that file (the
    package holds it: :data:`~.config_yaml.PACKAGED_CONFIGS`), it says so: ``--train-command``
    gives the command then."""
    from .resume import saved_values
    if not data.get("config"):
        return "not recorded (the checkpoint holds no run config; --train-command gives it)"
    if not DEFAULT_CONFIG.is_file():
        return ("python -m training.train with the card's 'config' (configs/default.yaml, to "
                "write it as --set values, is not here)")
    config = saved_values(data)
    default = load_config(DEFAULT_CONFIG).model_dump(mode="json")
    changed = [f"{key}={value if isinstance(value, str) else json.dumps(value)}"
               for key, value in config.items()
               if key not in _NOT_LEARNING and key in default and value != default[key]]
    command = "make train" if not changed else shlex.join(
        ["python", "-m", "training.train", "--config", "configs/default.yaml",
         *(part for setting in changed for part in ("--set", setting))])
    resumed = resumes_text(resumes_of(data, "the checkpoint"))
    return command + ("   # then python -m training.distill (see the card's 'distill')"
                      if distilled else "") + (
        f"   # resumed with other settings ({resumed}): one run of it trains other weights"
        if resumed else "")


def _check_card_agents(agents) -> None:
    """``ValueError`` for an opponent (``--agents``, ``--search``) whose name or spec is not
    :data:`~sevenrocks_env.arena_report.CARD_TEXT`: they go into the card's Markdown tables and
    shell commands, as the names read from ``--extra-result`` files (checked the same way)."""
    from sevenrocks_env.arena import split_name
    for agent in agents:
        name, spec = split_name(agent)
        if not (is_card_text(name, MAX_CARD_NAME) and is_card_text(spec, MAX_CARD_SPEC)):
            raise ValueError(f"opponent {shown(agent)}: its name and spec must each be "
                             f"{CARD_TEXT} (they go into the model card)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.ship", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a training checkpoint or policy file to ship")
    parser.add_argument("--out", required=True,
                        help="the policy file to write, e.g. checkpoints/shipped/sevenrocks_ppo.pt"
                             " (its model card is written beside it)")
    parser.add_argument("--pairs", type=arguments.pairs, default=BAR_PAIRS,
                        help=f"duplicate pairs against each of --agents (default {BAR_PAIRS})")
    parser.add_argument("--agents", nargs="+", default=list(QUALITY_BARS),
                        help=f"the card's opponents (default: {' '.join(QUALITY_BARS)})")
    parser.add_argument("--search", default="search",
                        help="the search opponent of the card's last row (default: search)")
    parser.add_argument("--search-pairs", type=arguments.non_negative_pairs, default=100,
                        help="pairs against --search (default 100; 0: no search row)")
    parser.add_argument("--seed", type=arguments.seed, default=2025,
                        help="deal seed of every row (default 2025)")
    parser.add_argument("--arena", choices=("batched", "pool"), default="batched",
                        help="batched: all pairs stepped together on the batched engine; pool: "
                             "one match at a time in --workers processes (any agent)")
    parser.add_argument("--workers", type=arguments.workers, default=1,
                        help="processes of --arena pool")
    parser.add_argument("--extra-result", action="append", default=[], metavar="JSON",
                        help="add a result measured separately (`sevenrocks arena ... --json`)")
    parser.add_argument("--train-command", default=None,
                        help="how the checkpoint was trained (for the card; default: from its "
                             "run's config, `make train` or `python -m training.train --config "
                             "configs/default.yaml --set ...`)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    card_files = (out.parent / "model_card.json", out.parent / "MODEL_CARD.md")
    try:
        for path in (out, *card_files):
            check_output_file(path, [args.checkpoint, *args.extra_result])
        _check_card_folder(card_files[0], out.name)
        if args.train_command is not None and not _command_text(args.train_command):
            raise ValueError(f"--train-command must be {COMMAND_TEXT}")
        source = read_checkpoint(args.checkpoint)
        facts = run_facts(source, args.checkpoint)
        shipped = policy_only(source)
        # its weights, before --out is written; the card's model_config is the built network's
        model_config = build_model(shipped, args.checkpoint).model_config()
        distilled = distill_facts(source, args.checkpoint)
        _check_config(source, args.checkpoint, distilled is not None,
                      writes_command=args.train_command is None)
        if args.train_command is None:
            args.train_command = training_command(source, distilled is not None)
        extra = [read_result(path) for path in args.extra_result]
        plan = _plan(args)
        _check_card_agents(agent for agent, _ in plan)
        play = _arena(args, [agent for agent, _ in plan])  # an unknown agent stops here
        extra_rows = [dict(_row(result.opponent, result), source=result.source,
                           engine=result.engine) for result in extra]
        card = _card(args, argv, model_config, facts, distilled, extra_rows, out, 0)
        _card_files(card)  # rendered (not written) before any arena: it can be written
    except (CheckpointError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for result in extra:  # a row of the card is a result of this policy, nothing else
        if not same_policy(result.spec_a, shipped):
            print(f"error: {result.source}: its policy {shown(result.spec_a)} does not have the "
                  "weights of the policy being shipped", file=sys.stderr)
            return 2
    made = [folder for folder in (out.parent, *out.parent.parents) if not folder.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = None
    try:  # the policy and its card are staged, and replace the old ones only once all is done
        with tempfile.TemporaryDirectory(dir=out.parent, prefix=".ship-") as staging:
            staged = export_policy(args.checkpoint, Path(staging) / out.name, data=source)
            rows = _play(play, f"policy=ckpt:{staged}", plan, f"ckpt:{out}") + extra_rows
            card = _card(args, argv, model_config, facts, distilled, rows, out,
                         staged.stat().st_size)
            staged_cards = [Path(staging) / path.name for path in card_files]
            for staged_card, text in zip(staged_cards, _card_files(card, allow_nan=True)):
                staged_card.write_text(text, encoding="utf-8")
            for staged_file, path in zip((staged, *staged_cards), (out, *card_files)):
                os.replace(staged_file, path)
    except BaseException as stop:  # Ctrl-C, a dead arena worker: the folders made go too
        for folder in made:  # deepest first; the staging folder is gone already
            try:
                folder.rmdir()
            except OSError:  # not empty: something was moved in, or another process wrote
                break
        if isinstance(stop, AgentError):  # the policy's outputs not finite, say
            message = str(stop)  # (the arena played the staged copy: name the user's file)
            if staging is not None:
                message = message.replace(str(Path(staging) / out.name), str(args.checkpoint))
            print(f"error: {message}; nothing was written ({out} and its card are as they "
                  "were)", file=sys.stderr)
            return 1
        if isinstance(stop, OSError):  # the disk full, say (the staged file's name: not shown)
            print(f"error: cannot write {out} and its card: {stop.strerror or stop}; nothing "
                  f"was written ({out} and its card are as they were)", file=sys.stderr)
            return 1
        if not isinstance(stop, KeyboardInterrupt):
            raise
        print(f"interrupted: nothing was written ({out} and its card are as they were)",
              file=sys.stderr)
        return 130
    print(f"wrote {out}, {card_files[0]}, {card_files[1]}")
    return 0


def _check_card_folder(card: Path, name: str) -> None:
    """``ValueError`` when the folder holds the model card of another policy file: one folder
    has one card (``model_card.json``), and shipping ``name`` there would replace it."""
    if not card.exists():
        return
    try:
        held = json.loads(read_text(card, 1 << 20, "model card")).get("file")
        whose = f"is the card of {shown(held)}"
    except (ValueError, AttributeError, RecursionError):  # (deep nesting: RecursionError)
        held, whose = None, "cannot be read as a model card"
    if held != name:
        raise ValueError(f"{card} {whose}, not of {name}: one folder holds one policy's card; "
                         f"ship {name} into another folder (or move that card away)")


def _plan(args) -> list[tuple[str, int]]:
    """``(agent, pairs)`` of every game the card's arena plays: ``--agents``, then the search."""
    plan = [(agent, args.pairs) for agent in args.agents]
    if args.search_pairs > 0:
        plan.append((args.search, args.search_pairs))
    return plan


def _play(play, spec: str, plan, shipped: str) -> list[dict]:
    """The card's arena rows: ``spec`` against each ``(agent, pairs)`` of ``plan``; the tables
    printed name the policy ``shipped`` (its spec at ``--out``, not the staged file played)."""
    rows = []
    for agent, pairs in plan:
        started = time.time()
        result = play(spec, agent, pairs)
        rows.append(_row(agent, result))
        print(replace(result, spec_a=shipped).table(), f"\n({time.time() - started:.0f} s)\n",
              flush=True)
    return rows


def _card_files(card: dict, allow_nan: bool = False) -> tuple[str, str]:
    """The texts of ``model_card.json`` and ``MODEL_CARD.md``; ``ValueError`` when ``card``
    holds a value JSON cannot carry (every value from a file was checked: this is the last
    guard, run before the arena; the arena's own numbers are not refused after it played)."""
    try:
        texts = json.dumps(card, indent=1, allow_nan=allow_nan) + "\n", card_markdown(card)
        for text in texts:  # (UnicodeEncodeError is a ValueError: a lone surrogate, say)
            text.encode("utf-8")
        return texts
    except (TypeError, ValueError, KeyError, RecursionError) as error:
        raise ValueError(f"the model card cannot be written: {str(error)[:200]}") from None


def _card(args, argv, model_config: dict, facts, distilled, rows, out: Path,
          file_bytes: int) -> dict:
    """``model_card.json``'s contents (its commands name the policy at ``out``): only checked
    values (``model_config``: the shipped network's own, :meth:`PolicyNet.model_config`; the
    run's ``config``: :func:`_check_config`)."""
    spec = f"ckpt:{out}"
    config = facts["config"]
    return {
        "file": out.name, "global_step": facts["global_step"],
        "train_minutes": None if facts["wall_time"] is None else facts["wall_time"] / 60,
        "train_threads": config.get("torch_threads"),
        # where ship ran: the arena's times; the training machine is not in a checkpoint
        "machine": f"{platform.machine()} CPU, {os.cpu_count()} cores",
        "obs_version": OBS_VERSION, "model_config": model_config,
        "file_bytes": file_bytes, "arena": rows, "arena_kind": args.arena,
        "config": config,
        **({"distill": distilled} if distilled else {}),
        "commands": [args.train_command,
                     # every option as given: the command that wrote this card
                     "python -m training.ship " + shlex.join(
                         sys.argv[1:] if argv is None else [str(a) for a in argv]),
                     *(arena_command(spec, agent, pairs, args.seed, args.arena == "batched")
                       for agent, pairs in _plan(args)),  # each game the card's table plays
                     *(arena_command(spec, row["opponent"], row["pairs"], row["seed"],
                                     str(row["engine"]).startswith("batched"), json_to=path,
                                     device=str(row["engine"]).partition(":")[2] or "cpu")
                       for path, row in zip(args.extra_result, rows[-len(args.extra_result):])
                       if args.extra_result)],
    }


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("python -m training.ship", main))
