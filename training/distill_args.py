"""The settings of a distillation run (:mod:`training.distill`): one pydantic dataclass,
every field typed and bounded, and the rules over several fields, all checked when the object
is made (from the command line or from Python), before any file is read."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs

from sevenrocks_env.fingerprints import pinned

from .config_types import Folder, Int, Positive, Real, RunName, Widths
from .distill_collect import MAX_ENVS
from .distill_labels import MAX_FILES, MAX_LABELS, MAX_TEACHER_CHARS, MAX_VALUE, TEACHER_TEXT, \
    is_teacher_text

#: Smallest soft-target temperature, in points (below it the target is the argmax anyway).
MIN_TEMPERATURE = 1e-3


def _hard_or_soft(temperature: float) -> float:
    if 0 < temperature < MIN_TEMPERATURE:
        raise ValueError(f"temperature must be 0 (hard labels) or in [{MIN_TEMPERATURE:g}, "
                         f"{MAX_VALUE:g}] points")
    return temperature


def _one_line(text: str) -> str:
    if not text.isprintable():
        raise ValueError("must be one line of printable text")
    return text


def _named(run_name: str) -> str:
    if not run_name:
        raise ValueError("must not be empty (the logs go to <log_dir>/<run_name>)")
    return run_name


def _checkpoint_name(out: str) -> str:
    """``--out`` names the student's checkpoint: never an ``.npz``, the labels files' form (an
    existing labels file, hours of search, was replaced by the student, and the run's own labels
    went to ``<stem>.labels.labels.npz``)."""
    if out.lower().endswith(".npz"):
        raise ValueError("must name the policy checkpoint to write, not an .npz (labels files "
                         "are .npz: the labels go beside --out, <stem>.labels.npz)")
    return out


def _teacher(spec: str) -> str:
    """What a labels file may record (checked now, not when they are read back after hours of
    collecting): the spec with the network fingerprint the collection adds to it."""
    if not is_teacher_text(pinned(spec, "0" * 64)):
        raise ValueError(f"must be {TEACHER_TEXT}, the network's fingerprint included (a "
                         f"spec of at most {MAX_TEACHER_CHARS - len(pinned('', '0' * 64))} "
                         "characters)")
    return spec


#: A spec or a path: one line of text (the teacher's spec is written into the student's record).
Spec = Annotated[str, Field(min_length=1, max_length=MAX_TEACHER_CHARS, strict=True),
                 AfterValidator(_one_line)]
#: The teacher: a spec that its labels file and the student's record can carry.
Teacher = Annotated[str, Field(min_length=1, strict=True), AfterValidator(_teacher)]
#: Labels files (one path alone is taken as a list of one).
LabelsFiles = Annotated[list[Spec], Field(min_length=1, max_length=MAX_FILES),
                        BeforeValidator(lambda value: [value] if isinstance(value, str) else value)]
#: Options of the collection only: with ``--labels`` nothing is collected (a usage error).
COLLECTION_OPTIONS = ("teacher", "decisions", "num_envs", "workers")


@dataclass(config=ConfigDict(use_attribute_docstrings=True, validate_assignment=True))
class Args:
    """The run's settings, each checked (type and range) by pydantic when the object is made."""

    init: Spec = "shipped"
    """the student's starting weights: a policy checkpoint path or ``shipped``"""
    teacher: Teacher = "search:policy=shipped,samples=64"
    """the search agent spec whose choices are the targets (``search:...``)"""
    decisions: Int(1, MAX_LABELS) = 12_000
    """labelled decisions to collect"""
    labels: LabelsFiles | None = None
    """train on labels files saved by earlier runs instead of collecting: ``--labels a.npz
    [b.npz ...]`` (or the option again; the older ``a.npz,b.npz`` is read as two files when no
    file has that whole name); not with the collection's options"""
    num_envs: Int(1, MAX_ENVS) = 64
    """matches played side by side while collecting"""
    hidden_sizes: Widths | None = None
    """the student's trunk widths (``--hidden-sizes 512 512``): the init widened to them, as
    many layers, none narrower, its policy unchanged at the start (``training.networks.widen``);
    default: the init's"""
    epochs: Int(0, 10_000) = 6
    """passes over the labels (0: only collect the labels file; no policy is written)"""
    batch_size: Int(1, 1 << 16) = 256
    """labels per gradient step"""
    learning_rate: Positive(1.0) = 1e-4
    """Adam's step size"""
    temperature: Annotated[Real(0, MAX_VALUE), AfterValidator(_hard_or_soft)] = 0.0
    """0: train toward the teacher's action (hard labels); > 0: toward the soft target
    softmax(teacher's action values / temperature) over the legal actions (values in points;
    needs labels collected with values, as every collection since they were added is)"""
    seed: Int(0, 2 ** 63 - 1) = 1
    """seeds the collection's matches and worlds, the matches held out and the shuffling"""
    workers: Int(1, 64) = 1
    """processes collecting, each stepping a span of the ``num_envs`` matches with ``threads``
    torch threads (a search teacher keeps one core busy per process)"""
    threads: Int(1, 256) = 1
    """torch threads (1: on a small or busy machine more threads mostly spin -- two runs side by
    side with two threads each took 9 minutes an epoch on 2 cores, with one thread each under a
    minute for six)"""
    out: Annotated[Folder, AfterValidator(_checkpoint_name)] = \
        "checkpoints/distilled/sevenrocks_ppo.pt"
    """the student checkpoint to write (the labels go beside it, ``<stem>.labels.npz``)"""
    log_dir: Folder = "runs"
    """root folder of the TensorBoard runs"""
    run_name: Annotated[RunName, AfterValidator(_named)] | None = None
    """TensorBoard logs go to ``<log_dir>/<run_name>`` (by default the ``out`` file's name
    without its suffix); a folder holding an earlier run's logs is refused"""

    @model_validator(mode="before")
    @classmethod
    def _nothing_collected_with_labels(cls, given):
        """The collection's options with ``labels`` are refused, as they would be ignored: those
        given to ``Args(...)`` (as ``--labels`` with them is a usage error), or, on an
        assignment (``given``: every field), those set to other than their default."""
        if isinstance(given, ArgsKwargs):
            named = dict(zip(cls.__pydantic_fields__, given.args or ())) | (given.kwargs or {})
            options = [name for name in COLLECTION_OPTIONS if name in named]
        else:
            named = given
            options = [name for name in COLLECTION_OPTIONS
                       if named[name] != cls.__pydantic_fields__[name].default]
        if named.get("labels") is not None and options:
            options = [f"--{name.replace('_', '-')}" for name in options]
            one = len(options) == 1
            raise ValueError(f"{', '.join(options)} only set{'s' if one else ''} how labels are "
                             "collected, and with --labels nothing is collected (it trains on "
                             f"the files' labels): drop {'it' if one else 'them'}, or drop "
                             "--labels to collect")
        return given

    @model_validator(mode="after")
    def _work_to_do(self):
        """Settings that leave nothing to do, refused when made (before any file is read)."""
        if self.hidden_sizes is not None and self.epochs == 0:
            raise ValueError("--hidden-sizes sets the student's layers, and --epochs 0 trains "
                             "no student (it only collects labels): drop one of them")
        if self.labels is not None and self.epochs == 0:
            raise ValueError("--epochs 0 only collects labels: with --labels there is nothing "
                             "to do")
        if self.workers > self.num_envs:
            raise ValueError(f"--workers {self.workers} is more than --num-envs "
                             f"{self.num_envs}: each worker steps some of the matches")
        return self


__all__ = ["Args", "COLLECTION_OPTIONS", "MIN_TEMPERATURE"]
