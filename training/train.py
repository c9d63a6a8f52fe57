"""PPO self-play training for Seven Rocks: ``python -m training.train --config configs/default.yaml``.

    python -m training.train --config configs/default.yaml [--set key=value ...]
    python -m training.train --resume checkpoints/<run>/latest.pt [--set total_steps=...]
    python -m training.train --help-config        # every config field with its meaning

A new run refuses an existing run folder (``--force`` writes into it anyway).  ``--resume`` takes
the run's name and settings from the checkpoint but never its folders: it writes under
``runs/`` and ``checkpoints/`` (or ``--set log_dir=... checkpoint_dir=...``).  Ctrl-C finishes
the current update, writes a resumable checkpoint and exits (status 130); a second Ctrl-C stops
at once.

One shared policy plays every learner seat; each seat learns from its own trajectory with its
team's reward (:mod:`training.seats`).  Logs go to ``runs/<run>/`` (TensorBoard, CleanRL tag
names), checkpoints to ``checkpoints/<run>/``.  At the end the new policy plays the baselines in
the arena and the table is printed.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from sevenrocks_env.atomic_file import OutputError, check_output_folder
from sevenrocks_env.cli import help_text
from sevenrocks_env.driver import AgentError
from sevenrocks_env.policy import CheckpointError

from .agent_files import check_unchanged, fingerprints
from .checkpoint import (check_checkpoint_size, check_not_complete, check_nothing_later,
                         evaluated_batch, evaluated_minutes, evaluated_step,
                         load_training_checkpoint, mark_evaluated, minutes_text, more_minutes,
                         more_steps, save_training_checkpoint, set_rng_state, stopped_out_of_time)
from .config import (ConfigError, TrainConfig, check_set_once, describe_fields, load_config,
                     parse_overrides)
from .config_yaml import config_file
from .evaluation import evaluate_and_log, short_summary
from .interrupt import Interrupt, ctrl_c_as_keyboard_interrupt
from .opponents import PAST, OpponentPool
from .networks import build_networks, training_device, warm_start
from .ppo import DivergenceError, LogitsError, compute_gae, ppo_update, rollout_batch
from .resume import (check_resume, optimizer_state, restore_engine, resume_options, resumed_config,
                     trained_networks)
from .run_logs import LogsError, LogWriter
from .batched_rollout import BatchedSelfPlayEngine
from .rollout import SelfPlayEngine
from .seats import RolloutBuffer


def _hparams_table(cfg: TrainConfig) -> str:
    rows = "\n".join(f"|{key}|{value}|" for key, value in cfg.as_dict().items())
    return f"|param|value|\n|-|-|\n{rows}"


#: Rollout engines by the config's ``engine`` field (same interface: ``TrainConfig.engine``).
ENGINES = {"batched": BatchedSelfPlayEngine, "python": SelfPlayEngine}


def _mean(values) -> float | None:
    return float(np.mean(values)) if values else None


def run_folders(cfg: TrainConfig) -> tuple[Path, Path]:
    """``(<log_dir>/<run_name>, <checkpoint_dir>/<run_name>)``."""
    return Path(cfg.log_dir) / cfg.run_name, Path(cfg.checkpoint_dir) / cfg.run_name


def train(cfg: TrainConfig, resume: dict | None = None, final_table: bool = True,
          force: bool = False, resume_path=None) -> dict:
    """Run training; returns ``{"run_name", "checkpoint", "global_step", "results",
    "interrupted"}``; one whose final evaluation Ctrl-C stopped also says ``"out_of_time"``
    (whether ``max_minutes`` had ended the training).  Raises :class:`ConfigError` when the
    run's folders exist already (unless ``force``, or resuming the checkpoint at
    ``resume_path`` inside them, or one whose path is not given, with no later checkpoint
    there) and :class:`CheckpointError` for a bad piece of ``resume``; both before anything
    is written.  :class:`LogsError`: the TensorBoard logs cannot be written (a full disk), the
    checkpoints written before are whole."""
    from tqdm import tqdm

    if not cfg.run_name:
        cfg.run_name = f"ppo_seed{cfg.seed}_{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir, ckpt_dir = run_folders(cfg)
    resumed_dir = None if resume_path is None else Path(resume_path).resolve().parent
    resumed_elsewhere = resume is not None and resumed_dir not in (None, ckpt_dir.resolve())
    resume_path = resume_path or "checkpoint"  # how messages name a resume given without a path
    existing = next((folder for folder in (run_dir, ckpt_dir) if folder.exists()), None)
    if existing and not force and resume is None:
        latest, evaluated = ckpt_dir / "latest.pt", evaluated_step(ckpt_dir)
        used = evaluated_minutes(ckpt_dir)
        if not latest.is_file():
            go_on = (f"no checkpoint of it to continue ({latest} is missing: it stopped before "
                     "its first)")
        elif evaluated is not None and stopped_out_of_time(ckpt_dir):
            go_on = (f"max_minutes stopped it at step {evaluated} (its final evaluation is "
                     f"logged): continue it with {resume_options(latest, cfg)} "
                     f"{more_minutes(used)} (total_steps as it was)")
        elif evaluated is not None:  # a --resume as it is would be refused: the run is done
            spent = cfg.max_minutes and used is not None and used >= cfg.max_minutes
            go_on = (f"it is complete (its final evaluation is logged, step {evaluated}): train "
                     f"it on with {resume_options(latest, cfg)} "
                     f"{more_steps(evaluated, evaluated_batch(ckpt_dir, cfg.batch_size))}"
                     f"{' ' + more_minutes(used) if spent else ''}")
        else:
            go_on = f"continue it with {resume_options(latest, cfg)}"
        raise ConfigError(f"run folder {existing} exists already: {go_on}, write into it with "
                          "--force, or choose another run_name", "run_name")
    if existing and not force and resumed_elsewhere:  # another run of this name, or this run's
        raise ConfigError(                             # logs with its checkpoints elsewhere
            f"run folder {existing} exists, and the resumed checkpoint lies in {resumed_dir}, "
            f"not in {ckpt_dir}: writing there could mix two runs; --set checkpoint_dir="
            f"{shlex.quote(str(resumed_dir.parent))} writes beside the checkpoint (and --set "
            f"log_dir=... the logs elsewhere), --force into {existing}", "run_name")
    if resume is not None and not force and not resumed_elsewhere:
        check_nothing_later(ckpt_dir, resume)
    for key, folder in (("log_dir", run_dir), ("checkpoint_dir", ckpt_dir)):
        try:  # the first checkpoint comes after minutes of training: fail now, leaving nothing
            check_output_folder(folder)
        except OutputError as error:
            raise ConfigError(f"{key}: {error.reason}", key) from None
    check_checkpoint_size(cfg, resumed=resume is not None)  # --set may grow the pool on resume
    eval_files = fingerprints(cfg.eval_agents, "eval_agents")  # the weights it evaluates against
    device = training_device(cfg)
    torch.set_num_threads(cfg.torch_threads)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)

    model, critic, guess, optimizer = build_networks(cfg, device)
    if cfg.init_from and resume is None:
        warm_start(model, cfg)
    pool = OpponentPool(cfg.opponents, model, cfg.max_snapshots) if cfg.opponents else None
    on_device = {"device": device} if cfg.engine == "batched" else {}  # python: CPU only
    engine = ENGINES[cfg.engine](cfg.num_matches, cfg.seed, cfg.target, cfg.max_rounds,
                                 cfg.points_scale, cfg.win_reward, cfg.opponent_fraction, pool,
                                 **on_device)
    start_update, global_step, wall_before, resumes = 0, 0, 0.0, []
    if resume is not None:
        resumes = check_resume(resume, cfg, model, critic, resume_path, guess)  # (not engine)
        for name, network in trained_networks(model, critic, guess).items():
            network.load_state_dict(resume[name])
        optimizer.load_state_dict(optimizer_state(resume["optimizer"], optimizer))
        if pool is not None:
            pool.load_state_dict(resume.get("pool") or {"snapshots": [], "generators": []})
            pool.ensure_snapshot(model)  # `past` added on resume: a snapshot of the resumed policy
        restore_engine(engine, resume, cfg, resume_path)  # after the pool it refers to
        check_unchanged(resume.get("fingerprints"), pool.files if pool is not None else {},
                        eval_files, {key for key in resume["engine"]["opponents"] if key},
                        resume_path)  # a ckpt: file replaced since: other opponents
        if resumed_elsewhere:
            print(f"note: resuming {resume_path}, writing checkpoints to {ckpt_dir} and logs "
                  f"to {run_dir} (output folders never come from a file: --set "
                  "checkpoint_dir=... log_dir=... to write beside it)", file=sys.stderr)
        for folder in {ckpt_dir, resumed_dir or ckpt_dir}:  # the mark is beside the file
            check_not_complete(folder, resume, cfg.num_updates)
        set_rng_state(resume["rng"])
        start_update, global_step = resume["update"], resume["global_step"]
        wall_before = float(resume.get("wall_time", 0.0))
        used = wall_before / 60
        if cfg.max_minutes and used >= cfg.max_minutes:
            raise ConfigError(f"the run has used its max_minutes ({minutes_text(used)} of "
                              f"{cfg.max_minutes:g} min): continue it with --set max_minutes=M "
                              "(M larger, or 0 for no limit)", "max_minutes")
    interrupt = Interrupt().__enter__()  # before the first line: Ctrl-C from here is handled
    if final_table:
        stops = f"; training stops at {cfg.max_minutes:g} min" if cfg.max_minutes else ""
        print(f"resumed from step {global_step}" if resume is not None else
              f"run {cfg.run_name}", f"(logs {run_dir}, checkpoints {ckpt_dir}{stops})", flush=True)

    # a resume drops the points logged after its checkpoint (one value per step); a fresh run
    # marks its start (0) too, else TensorBoard's plugin loader took a first resume's for it
    purge_step = global_step + 1 if resume is not None else 0
    buffer = RolloutBuffer(cfg.batch_size)
    num_updates = cfg.num_updates
    start_time = time.time()
    session_steps, env_steps_before, checkpoint = 0, engine.env_steps, None
    results, summary = {}, "no eval yet"
    bar = tqdm(total=num_updates * cfg.batch_size, initial=global_step, unit="step",
               disable=not cfg.progress, dynamic_ncols=True, desc=cfg.run_name)

    saved_wall = wall_before  # the wall time the last checkpoint keeps (what a resume reads)

    def save(update: int) -> Path:
        nonlocal saved_wall
        engine_state = engine.state_dict()  # first: its opponent keys register dropped snapshots
        saved_wall = wall_before + time.time() - start_time
        return save_training_checkpoint(ckpt_dir, model, optimizer, cfg, global_step, update,
                                        saved_wall, engine_state,
                                        pool.state_dict() if pool is not None else None, critic,
                                        guess, {**eval_files, **(pool.files if pool else {})},
                                        resumes)

    def logs_stopped(reason: str) -> str:  # LogsError's message: the checkpoints are whole
        last = checkpoint or (resume_path if resume is not None else None)
        kept = f"the last checkpoint is {last}, intact" if last else "no checkpoint was written"
        go_on = f"continue with {resume_options(last, cfg)}" if last else \
            "start it again with --force"
        return (f"training stopped at update {update} (step {global_step}): cannot write the "
                f"TensorBoard logs in {run_dir}: {reason}; {kept} (free space there, or --set "
                f"log_dir=... to write them elsewhere, and {go_on})")

    update, out_of_time = start_update, False
    try:
        writer = LogWriter(run_dir, purge_step, logs_stopped)
        # at step 0, or at the resume's purge_step: a resumed run's table (its --set changes) is
        # its own, and a later resume from the same checkpoint drops it with the other points
        writer.add_text("hyperparameters", _hparams_table(cfg), purge_step)
        for update in range(start_update + 1, num_updates + 1):
            # -- learning rate schedule (linear to 0 over the whole run, CleanRL) -----------------
            lr = cfg.learning_rate * (1.0 - (update - 1.0) / num_updates if cfg.anneal_lr else 1.0)
            optimizer.param_groups[0]["lr"] = lr
            ent_coef = cfg.ent_coef_at(update, num_updates)  # constant unless ent_coef_final

            # -- rollout --------------------------------------------------------------------------
            rollout_start = time.time()
            engine.collect(model, buffer, cfg.num_steps, critic)
            rollout_time = time.time() - rollout_start
            advantages, returns = compute_gae(buffer.rewards, buffer.values, buffer.dones,
                                              buffer.next_index, buffer.bootstrap, cfg.gamma,
                                              cfg.gae_lambda)
            batch = rollout_batch(buffer, advantages, returns, device,
                                  hands=critic is not None or guess is not None)

            # -- PPO update -----------------------------------------------------------------------
            losses = ppo_update(model, optimizer, batch, cfg, critic, ent_coef, guess)
            global_step += cfg.batch_size
            session_steps += cfg.batch_size
            if pool is not None and PAST in cfg.opponents and update % cfg.snapshot_every == 0:
                pool.add_snapshot(model)

            # -- logging --------------------------------------------------------------------------
            elapsed = time.time() - start_time
            scalars = dict(losses)
            scalars["charts/learning_rate"] = lr
            scalars["charts/ent_coef"] = ent_coef
            scalars["charts/SPS"] = session_steps / elapsed
            scalars["charts/rollout_SPS"] = cfg.batch_size / rollout_time
            scalars["charts/env_steps_per_s"] = (engine.env_steps - env_steps_before) / elapsed
            scalars["charts/updates_per_s"] = (update - start_update) / elapsed
            for key, values in engine.pop_stats().items():
                if values:
                    scalars[f"charts/{key}"] = _mean(values)
            for key, value in scalars.items():
                writer.add_scalar(key, value, global_step)

            wall = wall_before + time.time() - start_time  # the run's, resumed sessions included
            out_of_time = cfg.max_minutes and wall / 60 >= cfg.max_minutes
            if cfg.eval_every and update % cfg.eval_every == 0 and update != num_updates \
                    and not out_of_time:  # the final evaluation follows at this step
                results = evaluate_and_log(writer, model, cfg, cfg.eval_pairs, global_step,
                                            wall_before + time.time() - start_time, eval_files)
                summary = short_summary(results)
            # the bar's own ETA counts steps; max_minutes may stop the run before them
            used = (wall_before + time.time() - start_time) / 60  # (the evaluation's too)
            left = f" | stops in {max(cfg.max_minutes - used, 0):.1f} min" \
                if cfg.max_minutes else ""
            bar.set_postfix_str(f"SPS {scalars['charts/SPS']:.0f}{left} | {summary}", refresh=False)
            bar.update(cfg.batch_size)

            if update % cfg.checkpoint_every == 0 or update == num_updates or out_of_time:
                checkpoint = save(update)
            if out_of_time:
                bar.write(f"stopping: max_minutes={cfg.max_minutes} reached at step {global_step}")
                break
            if interrupt.requested:
                checkpoint = save(update)
                break
    except (DivergenceError, AgentError) as error:  # nothing of this update is saved
        last = checkpoint or (resume_path if resume is not None else None)
        last = f"the last checkpoint is {last}" if last else "no checkpoint was written"
        if isinstance(error, AgentError):  # an opponent or evaluation agent (a broken ckpt:)
            raise AgentError(f"training stopped at update {update} (step {global_step}): "
                             f"{error}; {last} (take the agent out of opponents/eval_agents "
                             "to go on)") from None
        start = cfg.init_from if resume is None else resume_path
        hint = (f"the starting network, {start}, gives unusable outputs"
                if isinstance(error, LogitsError) and update == start_update + 1 and start else
                "lower learning_rate or max_grad_norm, or check the rewards")
        raise DivergenceError(f"training diverged at update {update} (step {global_step}): "
                              f"{error}; {last} ({hint})") from None
    finally:  # the bar ends before an error's message (on a line of its own)
        interrupt.__exit__()
        bar.close()
    if checkpoint is None or update == start_update:
        checkpoint = save(update)
    if interrupt.requested:
        writer.close()
        return {"run_name": cfg.run_name, "checkpoint": checkpoint, "global_step": global_step,
                "results": {}, "interrupted": True}

    # -- final evaluation: the arena table against the baselines ------------------------------
    if final_table:
        pairs = cfg.final_eval_pairs
        print(f"final evaluation: {pairs:,} duplicate pair{'s' * (pairs != 1)} against each of "
              f"{', '.join(cfg.eval_agents)}", flush=True)
    try:
        results = evaluate_and_log(writer, model, cfg, cfg.final_eval_pairs, global_step,
                                    wall_before + time.time() - start_time, eval_files)
    except AgentError as error:
        writer.close()
        raise AgentError(f"the final evaluation stopped: {error}; the checkpoint is "
                         f"{checkpoint} (take the agent out of eval_agents and --resume it "
                         "to run the final evaluation)") from None
    except KeyboardInterrupt:  # the checkpoint is written: --resume runs the final evaluation
        writer.close()
        return {"run_name": cfg.run_name, "checkpoint": checkpoint, "global_step": global_step,
                "results": {}, "interrupted": True, "out_of_time": bool(out_of_time)}
    writer.close()
    mark_evaluated(ckpt_dir, global_step, cfg.batch_size, saved_wall / 60,
                   out_of_time=bool(out_of_time) and update < num_updates)
    if final_table:
        print(f"\nrun {cfg.run_name}: {global_step} steps, {minutes_text(saved_wall / 60)} min of "
              f"training ({minutes_text((wall_before + time.time() - start_time) / 60)} with the "
              f"final evaluation), checkpoint {checkpoint}")
        for spec, result in results.items():
            print(f"\npolicy vs {spec} ({cfg.final_eval_pairs} duplicate match pairs)")
            print(result.table())
        print(f"\nTensorBoard:  tensorboard --logdir {cfg.log_dir}")
    return {"run_name": cfg.run_name, "checkpoint": checkpoint, "global_step": global_step,
            "results": results, "interrupted": False}


def _parser(prog: str) -> argparse.ArgumentParser:
    description = help_text(__doc__).replace("python -m training.train", prog)
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", metavar="PATH",
                        help="YAML config file, or 'default' (make train's, configs/default.yaml"
                             ", which the package holds) or 'smoke' where no such file is")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field (repeatable)")
    parser.add_argument("--resume", metavar="PATH",
                        help="continue a run from its checkpoint (its config, then --set; the "
                             "output folders are runs/ and checkpoints/ unless --set says)")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing run folder, or resume over the run's "
                             "later checkpoints (their TensorBoard points are dropped)")
    parser.add_argument("--help-config", action="store_true", help="list the config fields")
    return parser


def main(argv=None, prog: str = "sevenrocks train") -> int:
    """The command line, as ``sevenrocks train`` runs it (``prog``: how the help names it)."""
    args = _parser(prog).parse_args(argv)
    if args.resume and args.config:  # a resumed run's settings are its checkpoint's (and --set)
        print("error: --config and --resume do not go together: a resumed run keeps its own "
              "config; change a setting with --set", file=sys.stderr)
        return 2
    if args.help_config:
        defaults = TrainConfig().as_dict()
        print("The config fields and their defaults when a config file leaves them out\n"
              "(what make train uses is configs/default.yaml, --config default):\n")
        for name, doc in describe_fields().items():
            print(f"{name} (default {defaults[name]!r}):\n    {help_text(doc)}")
        return 0
    # the training loop's own handler put the inherited "ignore" of a background run back
    # before the final evaluation, which `kill -INT` then could not stop
    with ctrl_c_as_keyboard_interrupt():
        return _run(args)


def _run(args) -> int:
    """``main`` after its arguments: train or resume, and the exit status."""
    try:
        check_set_once(args.set)
        resume = None
        if args.resume:
            resume = load_training_checkpoint(args.resume)
            cfg = resumed_config(resume, parse_overrides(args.set), args.resume)
        elif args.config:
            cfg = load_config(config_file(args.config), args.set)
        else:
            print("error: give --config PATH (or --resume PATH; --config default is make "
                  "train's)", file=sys.stderr)
            return 2
        out = train(cfg, resume, force=args.force, resume_path=args.resume)
    except (ConfigError, CheckpointError, DivergenceError, AgentError, LogsError) as error:
        print(f"error: {error}", file=sys.stderr)  # (a bad input: 2; training failed: 1)
        return 2 if isinstance(error, (ConfigError, CheckpointError)) else 1
    except KeyboardInterrupt:
        print("interrupted: stopped at once, no checkpoint written for the current update",
              file=sys.stderr)
        return 130
    if out["interrupted"]:
        print(f"interrupted at step {out['global_step']}: checkpoint {out['checkpoint']}; "
              f"continue with {resume_options(out['checkpoint'], cfg)}"
              + (" --set max_minutes=M (M above the minutes it ran, or 0)"
                 if out.get("out_of_time") else ""), file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # a closed stdout (--help-config | head): quiet, as sevenrocks train
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("python -m training.train", lambda: main(prog="python -m training.train")))
