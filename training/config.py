"""The trainer's configuration: one pydantic model, a docstring per field, loaded from YAML.

    cfg = load_config("configs/default.yaml", overrides=["learning_rate=1e-4", "seed=3"])

Config files and ``--set`` values are untrusted input (a config may come from someone else), so
every field has a type and a range that pydantic checks before any training starts: ``nan`` and
``inf`` are refused for every float, every size has an upper bound, bools are not ints, unknown
keys are refused with the nearest valid key suggested.  Anything wrong raises
:class:`ConfigError` (a ``ValueError``) naming the key and where it came from (the YAML file or
``--set``), in one short line (the offending value is shown cut to a few dozen characters).
``describe_fields()`` gives the field docs (``--help-config``); reading the YAML itself is
:mod:`training.config_yaml`.
"""

from __future__ import annotations

import datetime
import difflib
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sevenrocks_env.checks import shown
from sevenrocks_env.policy import TEMPERATURE_RANGE
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET

from .config_types import (Device, Flag, Folder, Int, NonEmptySpecs, Positive, Real, RunName,
                           ScorerWidths, Specs, Widths)
from .config_yaml import ConfigError, _read_yaml, load_yaml_file


#: Largest learner batch (num_matches * num_steps): the rollout buffer holds 1,434 bytes per
#: step (1.5 GB at this batch, before the update copies it to the device).
MAX_BATCH = 1 << 20
BIG = 10 ** 9
#: Fields naming where a run writes: set on the command line only, never by a config file or a
#: checkpoint (docs/security.md).
OUTPUT_FOLDERS = ("log_dir", "checkpoint_dir")


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    # -- run --------------------------------------------------------------------------------
    run_name: RunName = ""
    """Name of the run: TensorBoard logs go to ``<log_dir>/<run_name>/``, checkpoints to
    ``<checkpoint_dir>/<run_name>/``. A plain folder name (letters, digits, ``_ . -``; no path
    separators). Empty: ``ppo_seed<seed>_<date-time>``."""
    seed: Int(0, 2 ** 32 - 1) = 1
    """Seeds the deals, the torch and numpy generators; same seed, same run."""
    torch_threads: Int(1, 256) = 1
    """``torch.set_num_threads``: 1 is fastest for this small network on a shared 2-core CPU."""
    device: Device = "cpu"
    """Where the networks, the PPO update and the batched engine's matches live: ``cpu``,
    ``cuda`` (the current GPU) or ``cuda:N``.  Needs ``engine: batched``; the checkpoints hold CPU
    tensors whatever it is, so a run may change it on ``--resume`` (the floats then differ in
    their last bits, so the run is not bit for bit the one it would have been)."""
    total_steps: Int(1, 10 ** 11) = 3_000_000
    """Training decisions (env steps of the learner seats, forced moves excluded) to collect."""
    max_minutes: Real(0, 10 ** 6) = 0.0
    """Stop early (with a checkpoint and the final evaluation) once the run's wall time, resumed
    sessions included, reaches this many minutes; 0 = off."""
    log_dir: Folder = "runs"
    """Root folder of the TensorBoard runs (on ``--resume`` too: never taken from the checkpoint)."""
    checkpoint_dir: Folder = "checkpoints"
    """Root folder of the checkpoints (on ``--resume`` too: never taken from the checkpoint)."""
    checkpoint_every: Int(1, BIG) = 20
    """Write ``step_<n>.pt`` and ``latest.pt`` every this many updates (and at the end)."""
    progress: Flag = True
    """Show a tqdm progress bar with the latest evaluation numbers."""

    # -- games ------------------------------------------------------------------------------
    num_matches: Int(1, 65536) = 128
    """Matches played side by side in one process; one batched forward pass per step."""
    num_steps: Int(1, 65536) = 64
    """Learner decisions per match per rollout: batch size = num_matches * num_steps learner
    decisions (the batched engine fills it at a varying rate per match)."""
    engine: Literal["batched", "python"] = "batched"
    """Rollout engine: ``batched`` steps all matches in one ``VectorEnv`` call
    (:mod:`training.batched_rollout`); ``python`` plays one ``rules.Match`` per match
    (:mod:`training.rollout`).  Training data of the same meaning (a seed deals other matches on
    each engine); their resume states differ, so a run keeps its engine."""
    target: Int(1, MAX_TARGET) = 250
    """Match target score (R8)."""
    max_rounds: Int(1, MAX_ROUNDS) = 60
    """Rounds after which a training match is cut off (counted as neither win nor loss)."""
    points_scale: Real(0, 1000) = 0.01
    """Reward per point of score margin: a seat's reward is (own team's score change - the other
    team's) * points_scale, summed between its decisions (deductions included)."""
    win_reward: Real(0, 1000) = 1.0
    """Extra terminal reward: +win_reward to both winners, -win_reward to both losers."""

    # -- opponents --------------------------------------------------------------------------
    opponents: Specs = Field(default_factory=list)
    """Pool of opponents for some matches: agent specs (``greedy``, ``heuristic``, ``random``,
    ``ckpt:path``, ``sample:policy=PATH[,temperature=T]``, ``search:samples=N``; quote a spec
    with a comma in a ``--set`` list) and ``past`` (a frozen earlier snapshot of this run).
    Empty: pure self-play. Not OpenSpiel bots, nor ``search`` with a ``time_limit`` or
    ``inference``: what they play depends on state a checkpoint does not keep, on the machine's
    speed, or on the round's plays; nor ``sb3:`` (it loads a pickle: a command line only)."""
    opponent_fraction: Real(0, 1) = 0.0
    """Fraction of matches where one team is a pool opponent (the other team is the learner)."""
    snapshot_every: Int(1, BIG) = 10
    """Keep a frozen snapshot of the policy for the ``past`` opponent every this many updates."""
    max_snapshots: Int(1, 1000) = 5
    """How many recent snapshots the ``past`` opponent samples from."""

    # -- PPO (names as in CleanRL) ----------------------------------------------------------
    hidden_sizes: Widths = Field(default_factory=lambda: [256, 256])
    """Widths of the shared MLP trunk (and of the oracle critic's)."""
    action_features: Int(0, 1000) = 2
    """Version of the policy's per-action feature layer (``sevenrocks_env.policy_features``:
    1 = points, end sums and replies; 2 = also the chance a seat must knock and own tiles that
    still fit; 3 = also the right opponent's reply, our own next score, the partner's plays and
    knocks, the match score near the target); 0 = none."""
    action_scorer: Literal["bilinear", "mlp"] = "bilinear"
    """How the action features become logits: ``bilinear`` = features . weights(state);
    ``mlp`` = a small network per legal placement over [state, features, tile and slot
    embeddings] (``sevenrocks_env.policy_scorer``; needs ``action_features`` >= 1)."""
    scorer_sizes: ScorerWidths = Field(default_factory=lambda: [128, 64])
    """Hidden layer widths of the ``mlp`` action scorer (ignored with ``bilinear``)."""
    init_from: Annotated[str, Field(max_length=1024, pattern=r"^[^\x00]*$", strict=True)] = ""
    """Start the policy from this policy checkpoint's weights (a path, or ``shipped``) instead of
    a random initialisation: fine-tuning, or a best response warm-started from the policy it
    attacks.  Its network must be this config's (``hidden_sizes``, ``action_features``,
    ``action_scorer``, ``scorer_sizes``).  The critic, the optimiser and the opponents start
    fresh.  Cannot change on ``--resume`` (the warm start is done when the run begins).  Empty:
    random weights."""
    init_temperature: Real(*TEMPERATURE_RANGE) = 1.0
    """Divide the ``init_from`` policy's logits by this (its output layers scaled by 1 /
    temperature: the most probable action stays the same).  Below 1 the policy starts sharper: a
    distilled policy such as the shipped one is flat, so sampling it (as the rollouts do) plays
    far worse than its argmax, and PPO's first updates go to sharpening it (docs/training.md).
    Needs ``init_from``; 1: its weights as they are."""
    critic: Literal["shared", "oracle"] = "oracle"
    """Where values come from: ``shared`` = the value head on the policy's trunk (sees the seat's
    observation); ``oracle`` = a separate network that also sees the other seats' hands
    (training only, ``training/critic.py``; the policy still sees only the observation)."""
    hand_coef: Real(0, 100) = 0.0
    """Weight of an auxiliary loss on the policy's trunk: a head guesses which other seat holds
    each hidden tile, trained against the real hands (training only, ``training/hand_guess.py``;
    the head is not part of the policy file).  0 = off."""
    learning_rate: Real(0, 1) = 2.5e-4
    """Adam learning rate at the start."""
    anneal_lr: Flag = True
    """Decay the learning rate linearly toward 0 over ``total_steps`` (CleanRL's schedule: the
    last of ``N`` updates trains at ``1 / N`` of the start rate)."""
    gamma: Real(0, 1) = 0.99
    """Discount per own decision of a seat."""
    gae_lambda: Real(0, 1) = 0.95
    """GAE lambda."""
    num_minibatches: Int(1, MAX_BATCH) = 4
    """Minibatches per epoch."""
    update_epochs: Int(1, 1000) = 4
    """Passes over each rollout."""
    norm_adv: Flag = True
    """Normalise advantages per minibatch."""
    clip_coef: Positive(100) = 0.2
    """PPO clipping coefficient."""
    clip_vloss: Flag = True
    """Clip the value loss as in the PPO paper's code."""
    ent_coef: Real(0, 100) = 0.01
    """Entropy bonus coefficient (entropy over legal actions only); at the start of the run
    when ``ent_coef_final`` is set."""
    ent_coef_final: Real(0, 100) | None = None
    """Entropy coefficient at the end of the run, approached linearly over ``total_steps``
    (like the learning rate with ``anneal_lr``, CleanRL's convention: update ``u`` of ``N``
    uses the fraction ``(u - 1) / N`` of the way, so the last update is ``1 / N`` short of it);
    ``null`` = constant ``ent_coef``."""
    vf_coef: Real(0, 1000) = 0.5
    """Value loss coefficient."""
    max_grad_norm: Positive(1e6) = 0.5
    """Global gradient-norm clip."""
    target_kl: Real(0, 1000) = 0.0
    """Stop an update's epochs early when approx KL exceeds this; 0 = off."""

    # -- evaluation -------------------------------------------------------------------------
    eval_every: Int(0, BIG) = 25
    """Evaluate with the arena every this many updates (0 = only at the end)."""
    eval_agents: NonEmptySpecs = Field(default_factory=lambda: ["random", "greedy", "heuristic"])
    """Baselines the policy is evaluated against (agent specs)."""
    eval_pairs: Int(1, 100_000) = 30
    """Duplicate match pairs per baseline in periodic evaluations."""
    final_eval_pairs: Int(1, 100_000) = 200
    """Duplicate match pairs per baseline in the final arena table."""
    eval_seed: Int(0, 2 ** 32 - 1) = 12345
    """Arena seed (fixed, so every evaluation plays the same deals)."""

    def validate_fields(self, agents: bool = True) -> None:
        """Raise :class:`ConfigError` for combinations of values that cannot work; with
        ``agents``, also for an opponent or evaluation agent that cannot be made (it is made:
        a ``ckpt:`` file is read)."""
        from sevenrocks_env.policy_features import ActionFeatures
        if self.action_features != 0 and self.action_features not in ActionFeatures.SIZES:
            raise ConfigError(f"action_features must be 0 or one of {sorted(ActionFeatures.SIZES)}, "
                              f"got {self.action_features}", "action_features")
        if self.action_scorer == "mlp" and self.action_features == 0:
            raise ConfigError("action_scorer mlp scores the action features: it needs "
                              "action_features >= 1", "action_scorer", ("action_features",))
        if self.points_scale == 0 and self.win_reward == 0:
            raise ConfigError("points_scale and win_reward are both 0: every reward would be 0",
                              "points_scale", ("win_reward",))
        if self.device != "cpu" and self.engine != "batched":
            raise ConfigError(f"device {self.device}: only the batched engine runs off the CPU "
                              "(engine: batched)", "device", ("engine",))
        if self.init_temperature != 1.0 and not self.init_from:
            raise ConfigError("init_temperature sharpens the policy of init_from: give init_from "
                              "too", "init_temperature", ("init_from",))
        if self.opponent_fraction > 0 and not self.opponents:
            raise ConfigError("opponent_fraction > 0 needs a non-empty opponents list "
                              "(self-play only: opponent_fraction=0 too)",
                              "opponent_fraction", ("opponents",))
        if self.batch_size > MAX_BATCH:
            raise ConfigError(f"num_matches * num_steps ({self.batch_size}) must be at most "
                              f"{MAX_BATCH}", "num_matches", ("num_steps",))
        if self.batch_size % self.num_minibatches:
            raise ConfigError(f"num_matches * num_steps ({self.batch_size}) must be divisible by "
                              f"num_minibatches ({self.num_minibatches})", "num_minibatches",
                              ("num_matches", "num_steps"))
        if self.norm_adv and self.batch_size < 2:  # advantages are normalised per minibatch
            raise ConfigError(f"num_matches * num_steps ({self.batch_size}) must be at least 2 "
                              "with norm_adv (the std of one advantage is undefined)",
                              "num_matches", ("num_steps", "norm_adv"))
        if self.norm_adv and self.batch_size // self.num_minibatches < 2:
            raise ConfigError(f"a minibatch of {self.batch_size // self.num_minibatches} sample "
                              "cannot be normalised (std of one value): give num_minibatches at "
                              f"most {self.batch_size // 2}, or norm_adv false",
                              "num_minibatches", ("num_matches", "num_steps", "norm_adv"))
        if self.total_steps < self.batch_size:
            raise ConfigError(f"total_steps ({self.total_steps}) is less than one rollout "
                              f"({self.batch_size} = num_matches * num_steps)", "total_steps",
                              ("num_matches", "num_steps"))
        if not agents:
            return
        from sevenrocks_env.agents import make_agent

        from .opponents import training_opponent
        for key in ("opponents", "eval_agents"):
            for index, spec in enumerate(getattr(self, key)):
                if key == "opponents" and spec == "past":
                    continue
                try:
                    if key == "opponents":
                        training_opponent(spec)
                    else:
                        make_agent(spec, allow_pickles=False)  # configs are shared
                except ValueError as error:
                    before = getattr(self, key)[index - 1] if index else ""
                    if re.fullmatch(r"\s*\w+\s*=.*", spec) and ":" in before and "=" in before:
                        # [sample:policy=a.pt, temperature=0.5]: a spec split at its comma
                        error = (f"{spec!r} looks like a parameter of the spec before it, split "
                                 f"off at a comma: quote specs with commas, e.g. --set "
                                 f"'{key}=[\"sample:policy=shipped,temperature=0.5\"]'")
                    raise ConfigError(f"{key}: {str(error)[:300]}", key) from None

    @property
    def batch_size(self) -> int:
        return self.num_matches * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_steps // self.batch_size

    def ent_coef_at(self, update: int, num_updates: int) -> float:
        """Entropy coefficient of update ``update`` (1-based) of ``num_updates``: ``ent_coef``,
        or linearly from it to ``ent_coef_final`` (the learning rate's schedule, CleanRL)."""
        if self.ent_coef_final is None:
            return self.ent_coef
        done = (update - 1.0) / max(num_updates, 1)
        return self.ent_coef + (self.ent_coef_final - self.ent_coef) * done

    def as_dict(self) -> dict:
        return self.model_dump()


FIELDS = tuple(TrainConfig.model_fields)


def _unknown_key(key, source: str) -> ConfigError:
    name = key if isinstance(key, str) else shown(key)
    near = difflib.get_close_matches(name[:100], FIELDS, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else f"; valid keys: {', '.join(FIELDS)}"
    return ConfigError(f"{source}: unknown key {shown(name)}{hint}")


def first_problem(error: ValidationError) -> tuple[str, str, str]:
    """The first problem pydantic found: the field, the index inside it (``"[2]"`` or ``""``)
    and the message, in words for one line of an error."""
    problem = error.errors(include_input=False, include_url=False, include_context=False)[0]
    key = str(problem["loc"][0]) if problem["loc"] else "config"
    where = "".join(f"[{part}]" for part in problem["loc"][1:])
    return key, where, problem["msg"].removeprefix("Value error, ")


#: What YAML makes of an unquoted 12, 1.5, yes or 2024-01-01 where a text field wants text.
_UNQUOTED = {int: "a number", float: "a number", bool: "a boolean", datetime.date: "a date",
             datetime.datetime: "a date and time"}


def config_from_dict(values: dict, source: str = "config",
                     origins: dict | None = None, agents: bool = True) -> TrainConfig:
    """Build and validate a config.  ``origins`` maps a key to where its value came from
    (``"--set"``), so errors blame the right place; other keys are blamed on ``source``.
    ``agents=False``: its agent specs are not made (``training.ship`` reads a run's config,
    whose ``ckpt:`` opponents may be files of the machine that trained it)."""
    origins = origins or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: expected a mapping of key: value, got {type(values).__name__}")
    for key in values:
        if not (isinstance(key, str) and key in TrainConfig.model_fields):
            raise _unknown_key(key, origins.get(key, source) if isinstance(key, str) else source)
    try:
        cfg = TrainConfig(**values)
    except ValidationError as error:
        key, where, message = first_problem(error)
        got = shown(values.get(key)) if key in values else "nothing"
        if message.startswith("Input should be a valid string") and key in values \
                and origins.get(key) != "--set" and _UNQUOTED.get(type(values[key])):
            got += f" (YAML reads it as {_UNQUOTED[type(values[key])]}: quote text, e.g. " \
                   f"{key}: \"...\")"
        raise ConfigError(f"{origins.get(key, source)}: {key}{where}: {message}, "
                          f"got {got}") from None
    try:
        cfg.validate_fields(agents)
    except ConfigError as error:
        # a rule about several fields blames --set if any of them came from it
        blamed = [origins[key] for key in (error.key, *error.others) if key in origins]
        raise ConfigError(f"{blamed[0] if blamed else source}: {error}", error.key,
                          error.others) from None
    return cfg


def _annotation(key: str):
    return TrainConfig.model_fields[key].annotation


def check_set_once(overrides) -> None:
    """:class:`ConfigError` for a key given twice among the command line's ``--set`` values:
    the last one won without a word, as a key given twice in a file would (which
    :mod:`.config_yaml` refuses).  (Scripts that layer their own values under the user's pass
    them to :func:`load_config` directly.)"""
    seen = {}
    for text in overrides or ():
        key = text.partition("=")[0].strip()
        if key in seen:
            raise ConfigError(f"--set {key} is given twice ({shown(seen[key])}, then "
                              f"{shown(text)}): give it once", key)
        seen[key] = text


def parse_overrides(overrides) -> dict:
    """``["key=value", ...]`` -> dict; values are read as YAML (``3``, ``0.5``, ``[a, b]``),
    except a text field's (a name or a path: ``run_name=010`` or ``run_name=no`` is that text,
    not a number or ``False``; a quoted value is unquoted).  An empty value is ``[]`` for a
    list (``opponents=``: none) and ``""`` otherwise."""
    values = {}
    for text in overrides or ():
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {shown(text)}")
        if key not in TrainConfig.model_fields:
            raise _unknown_key(key, "--set")
        plain, kind = raw.strip(), _annotation(key)
        if not plain:
            values[key] = [] if getattr(kind, "__origin__", None) is list else ""
        elif kind is str and not plain.startswith(("'", '"')):
            values[key] = plain
        else:
            values[key] = _read_yaml(raw, f"--set {key}")
    return values


def load_config(path=None, overrides=(), base: dict | None = None) -> TrainConfig:
    """Config from a YAML file (or ``base``), then ``key=value`` overrides on top."""
    values = dict(base or {})
    source = str(path) if path is not None else "config"
    if path is not None:
        loaded = load_yaml_file(path)
        for key in loaded:
            if not (isinstance(key, str) and key in TrainConfig.model_fields):
                raise _unknown_key(key, source)
            if key in OUTPUT_FOLDERS:  # config files are shared: one must not choose where we write
                raise ConfigError(f"{source}: {key} is not read from a config file; output "
                                  f"folders come from the command line (--set {key}=PATH)")
        values.update(loaded)
    extra = parse_overrides(overrides)
    values.update(extra)
    cfg = config_from_dict(values, source, origins={key: "--set" for key in extra})
    check_pool_played(cfg, values, "--set" if "opponents" in extra else source)
    return cfg


def check_pool_played(cfg: TrainConfig, given, blamed: str) -> None:
    """:class:`ConfigError` (blaming ``blamed``) for opponents given (``given``: the keys the
    user wrote, in a file or with ``--set``) with an ``opponent_fraction`` of 0 they did not
    give (the default, or a resumed self-play run's): no match would be played against them."""
    if "opponents" in given and "opponent_fraction" not in given and cfg.opponents \
            and cfg.opponent_fraction == 0:
        raise ConfigError(f"{blamed}: opponents are listed but opponent_fraction is 0 (not "
                          "given): no match would be played against them; give "
                          "opponent_fraction (0 < f <= 1; 0: self-play only)", "opponents",
                          ("opponent_fraction",))


def describe_fields() -> dict[str, str]:
    """Field name -> its docstring (the string right below it in the class body)."""
    return {name: " ".join((info.description or "").split())
            for name, info in TrainConfig.model_fields.items()}
