"""Distil a search agent into the policy network (issue 11, expert iteration / DAgger).

    python -m training.distill --teacher "search:policy=shipped,samples=64" --decisions 12000 \\
        --out checkpoints/distilled/sevenrocks_ppo.pt
    python -m training.distill --labels checkpoints/distilled/sevenrocks_ppo.labels.npz \\
        --epochs 8 --out ...                           # retrain on the labels written beside it

Read top to bottom, it does three things:

1. **Collect** (DAgger): ``num_envs`` matches on the batched engine, every seat played by the
   *student* (the ``init`` policy, sampling from its distribution so that the states are the
   ones it visits, plus some variety).  Every decision with a real choice (two or more legal
   actions) is labelled with the *teacher's* action and its value of every legal action (what
   it maximises: the mean rollout margin, plus the prior term for ``search:policy``): a search
   agent (``search:...`` or ``search:policy=...``) given only that seat's observation and mask,
   all decisions of a step searched together (:mod:`training.distill_collect`).  Decision
   ``(step, env)`` is a function of ``(seed, step, env)`` alone, so ``--workers N`` processes,
   each stepping a span of the matches, label the same decisions as one.  The labels are saved
   (``<out stem>.labels.npz``; while collecting, every thousand labels or every twentieth of a
   large collection, with workers to one part file per span; the file records the collection's
   seed) so training can be re-run without searching again (``--labels a.npz [b.npz ...]``).
2. **Train**: the student, starting from ``init``'s weights, minimises the cross entropy between
   its masked distribution and the teacher's action (or, with ``--temperature T`` > 0, the soft
   target ``softmax(values / T)`` over the legal actions: the teacher's preferences, not only
   its choice), ``epochs`` passes over the labels in shuffled minibatches; whole matches
   holding about a tenth of the labels (at most a fifth) are held out to measure agreement
   with the teacher.
3. **Save** a policy checkpoint (``load_policy`` / ``ckpt:PATH``), the network of ``init``
   (or, with ``--hidden-sizes``, ``init``'s widened: :func:`training.networks.widen`); the file
   records the teacher (its spec and the SHA-256 of the network it loads), the number of
   labels, the agreement and the run's arguments, the init pinned as the teacher is (the start
   of the SHA-256 of the file's bytes and one zero byte: ``fingerprints.files_fingerprint``).

TensorBoard (``<log_dir>/<run_name>``): ``losses/distill_loss``, ``charts/teacher_agreement``
(each training minibatch's, before its step), ``charts/epoch_train_agreement`` (the epoch's,
over all its minibatches), ``charts/holdout_agreement`` (per epoch) and
``charts/holdout_agreement_where_init_differed`` (per epoch, on the held-out decisions where the
init chose otherwise than the teacher: what the student has to learn, which the overall
agreement hides under the decisions it already agreed on).
Whether the result is *stronger* is the arena's question, on fresh deals (``docs/training.md``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from pydantic import ValidationError

from sevenrocks_env import arguments
from sevenrocks_env.agents import spec_files
from sevenrocks_env.arena_pool import WorkerDied
from sevenrocks_env.atomic_file import OutputError, check_output_file, check_output_folder
from sevenrocks_env.checks import shown
from sevenrocks_env.fingerprints import files_fingerprint, pinned
from sevenrocks_env.cli import help_text
from sevenrocks_env.policy import MAX_HIDDEN_WIDTH, MaskedCategorical, PolicyNet, build_model, \
    read_checkpoint

from .checkpoint import policy_entries, run_facts, save_checkpoint
from .config import first_problem
from .distill_args import COLLECTION_OPTIONS, MIN_TEMPERATURE, Args
from .distill_collect import collect, collect_labels, make_teacher, part_paths_there, \
    pinned_teacher
from .distill_record import rounds_before
from .distill_labels import MAX_VALUE, LabelsError, join_labels_files, labels_file_names, \
    load_labels_files, save_labels
from .interrupt import ctrl_c_as_keyboard_interrupt
from .networks import widen
from .resume_record import resumes_of


NO_VALUES = ("temperature > 0 needs the teacher's values, and these labels have none (collected "
             "before values were kept)")


# ---------------------------------------------------------------------------- 2. train
def train_student(student: PolicyNet, labels: dict, args: Args, writer=None, log=print) -> dict:
    """Cross entropy toward the teacher's actions (or, with ``args.temperature``, toward the
    soft targets of :func:`soft_targets`, each minibatch's made as it is trained on: those of
    all the labels at once took gigabytes); returns the init's agreement with all the labels
    (``agreement_before``) and the last epoch's agreements: on its
    training minibatches (``epoch_train_agreement``, each measured before its step, weighted by
    its labels) and on the held-out labels: all, and where the init chose otherwise than the
    teacher (``..._where_init_differed``) or the same (``..._where_init_agreed``); and, after
    the last epoch, on the training labels where the init chose otherwise
    (``train_agreement_where_init_differed``: far above the held-out figure, it memorised)."""
    generator = torch.Generator().manual_seed(args.seed)
    n = len(labels["action"])
    values = None
    if args.temperature > 0:
        if labels.get("values") is None:
            raise LabelsError(NO_VALUES)
        values = torch.from_numpy(labels["values"])
    test, train = holdout_split(labels.get("match"), n, generator)
    held = len(test)
    obs = torch.from_numpy(labels["observation"])
    mask = torch.from_numpy(labels["action_mask"])
    action = torch.from_numpy(labels["action"])
    optimizer = torch.optim.Adam(student.parameters(), lr=args.learning_rate, eps=1e-5)
    epoch_agreement = holdout = learned = kept = float("nan")
    # where the init chose otherwise than the teacher: held out, what the student must learn
    # (overall agreement is mostly the decisions it already agreed on); in training, fitted far
    # better than held out, the student memorises instead of learning what carries over
    init_differs = modes_on(student, obs, mask) != action  # (no copy of the observations)
    differs, train_differs = init_differs[test], init_differs[train]
    before = share(~init_differs)
    log(f"student agrees with the teacher on {before:.3f} of the labels before training")
    step = 0
    for epoch in range(args.epochs):
        student.train()
        shuffled = train[torch.randperm(len(train), generator=generator)]
        agreed, loss_sum = 0, 0.0
        for start in range(0, len(shuffled), args.batch_size):
            rows = shuffled[start:start + args.batch_size]
            logits, _ = student(obs[rows], mask[rows])
            dist = MaskedCategorical(logits, mask[rows])
            if values is None:
                loss = -dist.log_prob(action[rows]).mean()
            else:
                targets = soft_targets(values[rows], mask[rows], args.temperature)
                loss = -(targets * dist.log_probs).sum(-1).mean()
            optimizer.zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(student.parameters(), 0.5)
            if not bool(torch.isfinite(norm)):  # (stepping would write NaN into every weight)
                raise FloatingPointError(
                    f"the fit diverged in epoch {epoch + 1} (after {step} samples): the loss's "
                    "gradient is not finite; lower --learning-rate (no policy was written)")
            optimizer.step()
            agree = int((dist.mode() == action[rows]).sum())
            agreed += agree
            loss_sum += loss.item() * len(rows)
            step += len(rows)
            if writer is not None:
                writer.add_scalar("losses/distill_loss", loss.item(), step)
                writer.add_scalar("charts/teacher_agreement", agree / len(rows), step)
        epoch_agreement = agreed / len(shuffled) if len(shuffled) else float("nan")
        epoch_loss = loss_sum / len(shuffled) if len(shuffled) else float("nan")
        agrees = modes_on(student, obs[test], mask[test]) == action[test]
        holdout, learned, kept = share(agrees), share(agrees[differs]), share(agrees[~differs])
        if writer is not None:
            writer.add_scalar("charts/epoch_train_agreement", epoch_agreement, step)
            writer.add_scalar("charts/holdout_agreement", holdout, step)
            writer.add_scalar("charts/holdout_agreement_where_init_differed", learned, step)
        log(f"epoch {epoch + 1}/{args.epochs}: mean loss {epoch_loss:.3f}, agreement "
            f"{epoch_agreement:.3f} on the epoch's training labels, {holdout:.3f} held out "
            f"({learned:.3f} of the {int(differs.sum()):,} where the init chose otherwise, "
            f"{kept:.3f} where it agreed)")
    student.eval()
    fitted = share((modes_on(student, obs, mask) == action)[train][train_differs])
    log(f"after training: {fitted:.3f} of the {int(train_differs.sum()):,} training labels where "
        f"the init chose otherwise (held out: {learned:.3f})")
    return {"agreement_before": before,
            "epoch_train_agreement": epoch_agreement, "holdout_agreement": holdout,
            "train_agreement_where_init_differed": fitted,
            "holdout_agreement_where_init_differed": learned,
            "holdout_agreement_where_init_agreed": kept, "holdout": held}


def holdout_split(match, n: int, generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(held-out rows, training rows): about a tenth of the labels, at most a fifth (none below
    10 labels).

    With match ids (``collect`` records them) whole matches are held out: taken in a shuffled
    order, each if it keeps the held-out rows within a fifth, until a tenth is reached.
    Decisions of one match share most of their observation, so a split by decision would
    measure agreement on near-copies of training labels.  Nothing is held out when no match is
    small enough; labels without match ids are split by decision."""
    if n < 10:
        return torch.zeros(0, dtype=torch.long), torch.arange(n)
    if match is None:
        order = torch.randperm(n, generator=generator)
        return order[: n // 10], order[n // 10:]
    ids, which = np.unique(match, return_inverse=True)
    counts = np.bincount(which, minlength=len(ids))
    chosen, held = [], 0
    for match_index in torch.randperm(len(ids), generator=generator).tolist():
        if held >= n // 10:
            break
        if held + counts[match_index] <= n // 5:
            chosen.append(match_index)
            held += int(counts[match_index])
    rows = np.isin(which, chosen)
    return torch.from_numpy(np.flatnonzero(rows)), torch.from_numpy(np.flatnonzero(~rows))


def soft_targets(values: torch.Tensor, mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """``softmax(values / temperature)`` over each row's legal actions, 0 elsewhere: the teacher's
    preferences, not only its choice (an action worth ``temperature`` points less gets ``1/e``
    times the weight).  One tensor of ``values``' size is made, and worked on in place."""
    if not MIN_TEMPERATURE <= temperature <= MAX_VALUE:
        raise ValueError(f"temperature must be in [{MIN_TEMPERATURE:g}, {MAX_VALUE:g}] points, "
                         f"got {shown(temperature)}")
    targets = torch.where(mask, values, -torch.inf)
    targets -= targets.amax(-1, keepdim=True)  # (x - best) / T <= 0: no overflow at a small T
    targets /= temperature
    targets.exp_()
    targets /= targets.sum(-1, keepdim=True)
    return targets


def agreement_on(model: PolicyNet, obs, mask, action) -> float:
    """Fraction of decisions where the model's most probable action is the teacher's."""
    return share(modes_on(model, obs, mask) == action)


@torch.inference_mode()
def modes_on(model: PolicyNet, obs, mask) -> torch.Tensor:
    """The model's most probable legal action at each decision."""
    model.eval()
    return torch.cat([torch.zeros(0, dtype=torch.long, device=obs.device)] + [
        MaskedCategorical(model(obs[rows], mask[rows])[0], mask[rows]).mode()
        # in batches: 400,000 at once took gigabytes
        for rows in (slice(start, start + 4096) for start in range(0, len(obs), 4096))])


def share(flags: torch.Tensor) -> float:
    """The fraction of true ``flags``, exactly (NaN of none)."""
    return int(flags.sum()) / len(flags) if len(flags) else float("nan")


#: Upper edges of the preference buckets, in points (the last bucket is open).
EDGES = (2.0, 5.0, 10.0)


def preference(values: torch.Tensor, action: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """Per decision, the teacher's value of ``action`` minus its value of ``other`` (points)."""
    return (values.gather(1, action[:, None]) - values.gather(1, other[:, None]))[:, 0]


def buckets(prefers: torch.Tensor, differs: torch.Tensor) -> dict:
    """``{name: rows}``: the decisions where the init agreed with the teacher (``~differs``), then
    the differing ones by the teacher's preference (``prefers``, :func:`preference`) over the
    init's choice, cut at :data:`EDGES`."""
    rows = {"init agreed": ~differs}
    bounds = (-float("inf"), *EDGES, float("inf"))
    for low, high in zip(bounds, bounds[1:]):
        name = (f"<= {high:g}" if low == bounds[0] else f"> {low:g}" if high == bounds[-1]
                else f"{low:g}-{high:g}")
        rows[name] = differs & (prefers > low) & (prefers <= high)
    return rows


# ---------------------------------------------------------------------------- 3. run
def run(args: Args, log=print) -> dict:
    """Collect (or read) labels, train the student, save it; returns the checkpoint's
    ``distill`` facts.  Torch runs on ``args.threads`` threads meanwhile.  (``args`` was
    checked when it was made: :class:`Args`.)"""
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _run(args, log)
    finally:
        torch.set_num_threads(threads)


def _run(args: Args, log) -> dict:
    torch.manual_seed(args.seed)
    init_data = read_checkpoint(args.init)
    # the init as the student records it: ``shipped`` names other weights once a policy ships
    pinned_init = pinned(args.init, files_fingerprint(f"ckpt:{args.init}"))
    student = build_model(init_data, args.init)
    # the wider student, if asked for: refused now if it cannot be, not after the collection
    try:
        wide = widen(student, args.hidden_sizes) if args.hidden_sizes else student
    except ValueError:
        raise ValueError(f"--hidden-sizes {' '.join(map(str, args.hidden_sizes))}: {args.init} "
                         f"holds layers {student.hidden_sizes}; give {len(student.hidden_sizes)} "
                         "widths, none narrower than the init's") from None
    # the run that trained the init goes into the student's file: checked now, not after hours
    init_run = run_facts({"global_step": 0} | init_data, args.init)
    init_resumes = resumes_of(init_data, args.init)  # (checked now: the card shows them)
    earlier = rounds_before(init_data, args.init)  # the init's own distillation, if any
    # --out must not be a file the run reads: the init, the labels, the teacher's network
    files = labels_file_names(args.labels) if args.labels else []
    inputs = [args.init, *files, *([] if args.labels else spec_files(args.teacher))]
    out = check_output_file(args.out, inputs)
    if args.epochs > 0:  # the logs are written after the collection: checked before it
        logs = log_folder(args)
    if args.labels:
        labels, teacher = join_labels_files(files, need_values=args.temperature > 0)
        log(f"{len(labels['action']):,} labels from {', '.join(files)} (teacher {teacher})")
    else:
        # the collection's labels file is written too, hours before --out: checked first
        labels_path = check_output_file(out.with_name(out.stem + ".labels.npz"), inputs)
        if labels_path.exists():  # hours of search: never replaced by a rerun's
            raise ValueError(f"{labels_path} is there already (the labels of an earlier "
                             "collection): train on it with --labels, or move it away")
        stale = part_paths_there(labels_path)  # (whatever --workers: a rerun with one worker
        if stale:                               # left a killed run's parts beside its labels)
            raise ValueError(f"{stale[0]} is there already (the labels of an earlier collection "
                             "that was stopped?): train on it with --labels, or move it away")
        labels, teacher = collect_labels(args, student.eval(), labels_path, log)
    if args.epochs == 0:  # the init, unchanged, is not a distilled policy: --out is not written
        log(f"--epochs 0: labels collected, no policy written to {out}")
        return {"teacher": teacher, "labels": int(len(labels["action"])), "epochs": 0}
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(str(logs))
    student = wide  # the collection played the init; the same policy in wider layers learns
    result = train_student(student, labels, args, writer, log)
    writer.close()
    data = policy_entries(student, init_run["global_step"])
    # the run that trained the init, for the model card (``training.ship`` checks them again)
    data.update({key: init_run[key] for key in ("config", "wall_time") if key in init_data})
    data.update({"resumes": init_resumes} if init_resumes else {})
    data["distill"] = {"teacher": teacher, "labels": int(len(labels["action"])), **result,
                       **({"earlier": earlier} if earlier else {}),
                       # with --labels the teacher is the files', and the collection's other
                       # options (their unused defaults) are left out
                       "args": {key: value for key, value in asdict(args).items()
                                if not (args.labels and key in COLLECTION_OPTIONS)}
                       | {"teacher": teacher, "init": pinned_init}}
    save_checkpoint(out, data)
    log(f"policy saved to {out}")
    return data["distill"]


def log_folder(args: Args) -> Path:
    """``<log_dir>/<run_name>``, the run name by default ``--out``'s stem, checked before any
    work: a folder that cannot take files, or one holding an earlier run's TensorBoard events
    (two runs' curves would mix at the same steps), is a ``ValueError``."""
    folder = Path(args.log_dir) / (args.run_name or Path(args.out).stem)
    try:
        check_output_folder(folder)
    except OutputError as error:
        raise ValueError(f"--log-dir: {error}") from None
    if folder.is_dir() and any(folder.glob("events.out.tfevents.*")):
        raise ValueError(f"{folder} holds the TensorBoard logs of an earlier run (the curves "
                         "would mix): give another --run-name, or move that folder away")
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.distill",
                                     description=help_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, value in asdict(Args()).items():  # values: only the options given
        kind = type(value) if value is not None else str
        several = {"nargs": "+", "action": "extend"} if name == "labels" else {}
        if name == "hidden_sizes":
            kind = arguments.int_in(1, MAX_HIDDEN_WIDTH)
            several = {"nargs": "+", "metavar": "WIDTH"}
        default = "" if value is None or value == [] else (
            f" (default: {' '.join(map(str, value)) if isinstance(value, list) else value})")
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=argparse.SUPPRESS,
                            help=help_text(Args.__pydantic_fields__[name].description) + default,
                            **several)
    values = vars(parser.parse_args(argv))
    try:
        args = Args(**values)
    except ValidationError as error:
        key, _, message = first_problem(error)
        if key not in values:  # a rule about several options (--labels with the collection's)
            parser.error(message)
        parser.exit(2, f"error: --{key.replace('_', '-')}: {message}, got {values.get(key)!r}\n")
    # ``kill -INT PID`` stops a collection a script started in the background, its labels kept
    with ctrl_c_as_keyboard_interrupt():
        try:
            run(args)
        except ValueError as error:  # bad spec, labels file or checkpoint: one clear line
            parser.exit(2, f"error: {error}\n")
        except KeyboardInterrupt:  # the labels collected so far are saved as they go
            saved = "" if args.labels else (f"; labels saved so far are beside --out "
                                             f"({Path(args.out).stem}.labels.npz, or its .part "
                                             "files)")
            print(f"interrupted: no policy was written{saved}", file=sys.stderr)
            return 130
        except (WorkerDied, OSError, FloatingPointError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    return 0


#: The steps (the ones from :mod:`training.distill_collect` and ``distill_labels`` included) and
#: the measures of a student against its teacher.
__all__ = ["Args", "EDGES", "LabelsError", "MIN_TEMPERATURE", "agreement_on", "buckets", "collect",
           "holdout_split", "load_labels_files", "main", "make_teacher", "modes_on",
           "pinned_teacher", "preference", "run", "save_labels", "share", "soft_targets",
           "train_student"]

if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    raise SystemExit(guarded("python -m training.distill", main))
