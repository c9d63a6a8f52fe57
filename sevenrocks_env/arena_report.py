"""The arena's tables: a two-column summary of one pairing, the round-robin matrix, short names.

Agents are shown by their display names (``name=spec`` on the command line, else the spec).  A
long name is shortened (a checkpoint to ``ckpt:<file stem>``, anything else with ``...`` in the
middle; in the matrix each kept unique), so column headers never run together and a long spec
does not widen a pairing's table; each table also lists the names with the specs they stand
for, whole.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import PurePath

from .agents import CHECKPOINT_SPECS
from .agents.spec_text import NAMED_SPEC
from .checks import counted, shown
from .match_state import MAX_ROUNDS

#: A saved arena result (``sevenrocks arena ... --json``) is at most this long (a real one is
#: about 1 KB).
MAX_RESULT_BYTES = 1_000_000

#: What a name or spec read from a result file may be, in words: it is printed to the terminal
#: and written into a model card's Markdown tables and shell commands.
CARD_TEXT = "one line of printable characters, no ` or |"

#: The arenas a result may say it was played on (``ArenaResult.engine``); None or "": not said.
ENGINES = ("python", "batched:cpu", "batched:cuda")


def is_card_text(value, limit: int) -> bool:
    """Whether ``value`` is :data:`CARD_TEXT` of 1 to ``limit`` characters (a lone surrogate
    is not printable either: it cannot be written to a UTF-8 file)."""
    return (isinstance(value, str) and 0 < len(value) <= limit and value.isprintable()
            and not set(value) & set("`|"))


def _fraction(value) -> bool:
    return type(value) in (int, float) and 0 <= value <= 1


def _finite(value) -> bool:
    return type(value) in (int, float) and abs(value) <= 1e9  # (NaN fails too)


def _seconds(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_finite(x) and x >= 0
                                                               for x in value)


#: The longest name, and spec, a result file (or a model card) may hold.
MAX_CARD_NAME, MAX_CARD_SPEC = 200, 1200
_TEXT_LIMITS = {"agent_a": MAX_CARD_NAME, "agent_b": MAX_CARD_NAME, "spec_a": MAX_CARD_SPEC,
                "spec_b": MAX_CARD_SPEC}

#: The fields of a saved two-agent result (``ArenaResult.as_dict``) and the check of each.
RESULT_FIELDS = {
    **{field: lambda v, n=limit: is_card_text(v, n) for field, limit in _TEXT_LIMITS.items()},
    "pairs": lambda v: type(v) is int and 0 < v <= 10 ** 9,
    "matches": lambda v: type(v) is int and 0 < v <= 2 * 10 ** 9,
    "win_rate": _fraction,
    "ci95": lambda v: isinstance(v, list) and len(v) == 2 and all(map(_fraction, v)),
    "mean_margin": _finite,
    "rounds_per_match": lambda v: _finite(v) and v >= 1,  # every match plays a round
    "seed": lambda v: v is None or (type(v) is int and 0 <= v < 2 ** 64),
    "seconds_per_decision": _seconds,
    "target": lambda v: type(v) is int and 0 < v <= 10 ** 9,
}

#: Fields an older result may lack, checked where given (a ladder's file adds ``wall_s``).
OPTIONAL_FIELDS = {
    "truncated": lambda v: type(v) is int and v >= 0,
    "max_rounds": lambda v: v is None or (type(v) is int and 1 <= v <= MAX_ROUNDS),
    "engine": lambda v: v in (None, "", *ENGINES),
    "cpu_seconds_per_decision": _seconds,
    "wall_s": lambda v: _finite(v) and v >= 0,
}


def read_result(path) -> dict:
    """A saved arena result (``--json``, or a file a script wrote from ``as_dict()``), each
    field of :data:`RESULT_FIELDS` checked (and of :data:`OPTIONAL_FIELDS` where given: one
    without ``max_rounds`` or ``engine`` does not say them), and the numbers those of an arena
    run (two matches a pair, the Wilson interval over the pairs, no more truncated matches than
    matches nor rounds than the round limit): ``ValueError`` naming the file and what is wrong.
    Other keys are kept unchecked, for the caller."""
    from .ratings import wilson_interval
    from .record import unique_keys
    from .textfile import read_text

    text = read_text(path, MAX_RESULT_BYTES, "arena result")  # ValueError saying why not
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)  # "win_rate" twice: refused
    except (ValueError, RecursionError) as error:
        raise ValueError(f"{path}: not a readable arena result ({str(error)[:80]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an arena result is a JSON object")
    for field, ok in (*RESULT_FIELDS.items(), *OPTIONAL_FIELDS.items()):
        if (field in RESULT_FIELDS or field in data) and not ok(data.get(field)):
            words = (f" ({CARD_TEXT}, at most {_TEXT_LIMITS[field]} characters)"
                     if field in _TEXT_LIMITS else "")
            raise ValueError(f"{path}: {field} is missing or out of range in this arena "
                             f"result{words}, got {shown(data.get(field))}")
    lo, hi = wilson_interval(data["win_rate"], data["pairs"])
    if data["matches"] != 2 * data["pairs"] or max(abs(lo - data["ci95"][0]),
                                                   abs(hi - data["ci95"][1])) > 1e-6:
        raise ValueError(f"{path}: matches must be 2 x pairs and ci95 the Wilson interval of "
                         "win_rate over the pairs; the file was not written by the arena as is")
    if data.get("truncated", 0) > data["matches"]:
        raise ValueError(f"{path}: {shown(data['truncated'])} truncated matches of "
                         f"{data['matches']}"
                         "; the file was not written by the arena as is")
    if data.get("max_rounds") is not None and data["rounds_per_match"] > data["max_rounds"]:
        raise ValueError(f"{path}: {data['rounds_per_match']} rounds per match, over its "
                         f"max_rounds {data['max_rounds']}; the file was not written by the "
                         "arena as is")
    return data


def read_policy_result(path):
    """A result file (:func:`read_result`) of a ``ckpt:`` policy at the default target and
    round limit, its opponent named as the arena names one (``training.ship --extra-result``:
    a model card's row of this policy's matches to 250), as an object of its checked fields,
    ``source`` (the path), ``opponent`` (:func:`named_spec`) and ``engine``; ``ValueError``
    naming the file and field."""
    from types import SimpleNamespace

    from .arena import DEFAULT_MAX_ROUNDS
    from .rules import DEFAULT_TARGET

    data = read_result(path)
    if data["spec_a"].partition(":")[0] not in CHECKPOINT_SPECS or data["target"] != \
            DEFAULT_TARGET or data.get("max_rounds") not in (None, DEFAULT_MAX_ROUNDS):
        raise ValueError(f"{path}: not an arena result of a ckpt: policy against one agent, "
                         f"target {DEFAULT_TARGET}, max_rounds {DEFAULT_MAX_ROUNDS} (spec_a "
                         f"{shown(data['spec_a'])}, target {data['target']}, max_rounds "
                         f"{data.get('max_rounds')})")
    opponent = named_spec(data["agent_b"], data["spec_b"])
    if opponent is None:
        raise ValueError(f"{path}: agent_b {shown(data['agent_b'])} is neither its spec nor a "
                         "name the arena gives an agent (letters, digits, _.+-)")
    return SimpleNamespace(**{field: data[field] for field in RESULT_FIELDS}, source=str(path),
                           opponent=opponent, engine=data.get("engine"))


def arena_command(spec_a: str, opponent: str, pairs: int, seed, batched: bool,
                  json_to=None, device: str = "cpu") -> str:
    """The ``sevenrocks arena`` command that plays ``spec_a`` against ``opponent`` (a spec, or
    ``name=spec``), every piece quoted for the shell; no ``--seed`` for a result of no seed,
    ``--device`` for a batched game played off the CPU, and ``--json > json_to`` where given."""
    on_device = ["--device", device] if batched and device != "cpu" else []
    words = ["sevenrocks", "arena", spec_a, opponent, "--pairs", str(pairs),
             *([] if seed is None else ["--seed", str(seed)]), *(["--batched"] * batched),
             *on_device,
             *(["--json"] if json_to is not None else [])]
    return shlex.join(words) + ("" if json_to is None else f" > {shlex.quote(str(json_to))}")


def named_spec(name: str, spec: str) -> str | None:
    """How the arena is given ``spec`` displayed as ``name``: the spec itself, or ``name=spec``
    (``name``: letters, digits, ``_.+-``); None when the arena cannot be given that name."""
    if name == spec:
        return spec
    named = NAMED_SPEC.match(f"{name}={spec}")
    return f"{name}={spec}" if named and named.groups() == (name, spec) else None


def round_robin_names(agents) -> list[tuple[str, object]]:
    """``arena.split_name`` of each of a round robin's ``agents``: ``TypeError`` for one
    string (``"greedy random"`` was read letter by letter) or no list at all; ``ValueError``
    for fewer than 2 agents or a display name given twice, with the fix that fits (a spec:
    ``name=spec``; an Agent object: a ``name`` attribute of its own)."""
    from .arena import split_name

    if isinstance(agents, (str, bytes)) or not hasattr(agents, "__len__"):
        raise TypeError(f"round robin: agents must be a list of agents or specs, got "
                        f"{type(agents).__name__} {shown(agents)}"
                        + ("; one spec each: agents.split()" if isinstance(agents, str) else ""))
    named = [split_name(agent) for agent in agents]
    names = [name for name, _ in named]
    if len(names) < 2:
        raise ValueError(f"round robin needs at least 2 agents, got {names}")
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        kinds = {isinstance(agent, str) for name, agent in named if name == twice}
        fix = {frozenset({True}): "give a repeated spec its own name: name=spec",
               frozenset({False}): "give each Agent object its own name attribute"}.get(
            frozenset(kinds), "name the spec (name=spec) or give the object another name")
        raise ValueError(f"round robin: agent {twice!r} is named twice ({fix})")
    return named


#: The longest name shown as a column header of the round-robin matrix.
MAX_NAME = 20


def short_name(name: str, width: int = MAX_NAME) -> str:
    """``name`` cut to at most ``width`` characters (``width >= 7``), recognisably."""
    if len(name) <= width:
        return name
    kind, colon, rest = name.partition(":")
    if colon and kind in CHECKPOINT_SPECS:
        name = f"{kind}:{PurePath(rest.strip()).stem}"
        if len(name) <= width:
            return name
    keep = width - 3
    return name[:keep - keep // 2] + "..." + name[len(name) - keep // 2:]


def short_names(names: list[str], width: int = MAX_NAME) -> list[str]:
    """:func:`short_name` of each, made unique with a ``~k`` suffix where two would collide."""
    out: list[str] = []
    for name in names:
        short = short_name(name, width)
        k = 2
        while short in out:
            short = short_name(name, width - 1 - len(str(k))) + f"~{k}"
            k += 1
        out.append(short)
    return out


def pair_table(result) -> str:
    """One pairing (an :class:`~sevenrocks_env.arena.ArenaResult`) as a title line and a
    two-column table.  The title and the labels show each agent by its :func:`short_name`
    (two specs that shorten alike: :func:`short_names`), so a long spec does not push the
    numbers far right; the spec an agent stands for (whole) is the value of its ``A = ...`` /
    ``B = ...`` row, when it is not the name shown."""
    lo, hi = result.ci95
    short_a, short_b = short_name(result.agent_a), short_name(result.agent_b)
    if short_a == short_b and result.agent_a != result.agent_b:  # two specs, one short name
        short_a, short_b = short_names([result.agent_a, result.agent_b])
    # the arena too: one seed deals other hands in the other arena (its own deal stream)
    arena = {"python": ", python arena", **{engine: ", batched arena" for engine in
                                             ENGINES[1:]}}.get(result.engine or "", "")
    rows = [("duplicate deals",
             f"{counted(result.pairs, 'pair')}, {result.matches} matches, seed {result.seed}"
             f"{arena}"),
            ("match", f"to {result.target} points (R8)" + (
                "" if result.max_rounds is None else
                f", cut at {counted(result.max_rounds, 'round')} (a cut match counts 1/2)"))]
    for side, short, spec in (("A", short_a, result.spec_a or result.agent_a),
                              ("B", short_b, result.spec_b or result.agent_b)):
        if spec != short:
            rows.append((f"{side} = {short}", spec))
    rows += [
        ("A match win rate",
         f"{result.win_rate:.3f}  95% CI [{lo:.3f}, {hi:.3f}] ({result.ci_method})"),
        ("mean final margin (A - B)", f"{result.mean_margin:+.1f}  " + (
            "(too few pairs for an interval)" if result.margin_ci95 is None else
            f"95% CI [{result.margin_ci95[0]:+.1f}, {result.margin_ci95[1]:+.1f}] "
            "(Student's t over pairs)")),
        ("points per round A / B",
         f"{result.points_per_round[0]:.1f} / {result.points_per_round[1]:.1f}"),
        ("A round win rate", f"{result.round_win_rate:.3f}"),
        ("rounds per match", f"{result.rounds_per_match:.2f}"),
        ("truncated matches", f"{result.truncated}"),
        ("wall ms per decision A / B", f"{1e3 * result.seconds_per_decision[0]:.3f} / "
                                       f"{1e3 * result.seconds_per_decision[1]:.3f}"),
        ("CPU ms per decision A / B", f"{1e3 * result.cpu_seconds_per_decision[0]:.3f} / "
                                      f"{1e3 * result.cpu_seconds_per_decision[1]:.3f}"),
        ("decisions per second", "- (this run played no pair: all came from its --log)"
         if result.decisions_per_s is None else f"{result.decisions_per_s:,.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join([f"{short_a} (A) vs {short_b} (B)",
                      *(f"{k:<{width}}  {v}" for k, v in rows)])


def rating_text(row: dict, decimals: int = 0) -> str:
    """A Bradley-Terry rating row's rating (``ratings.Ratings.rows``): ``+176``, or ``<= -996``
    for an agent (or a group) that lost every pair and ``>= ...`` for one that won every pair
    (the fit's prior sets those: they are only known to lie below, or above, all it met)."""
    side = row.get("one_sided") or ""
    mark = ">= " if side.startswith("won every pair") else \
        "<= " if side.startswith("lost every pair") else ""
    return f"{mark}{row['rating']:+.{decimals}f}"


def centre_text(rows: list[dict]) -> str:
    """What a rating of 0 is, for ratings ``rows``: the mean of the agents the data rate
    against each other: of the largest group, or of the largest groups when several tie, or of
    all when every group is one agent (module ``ratings``)."""
    if any(not r.get("one_sided") for r in rows):
        return "0 = the mean of the agents the data rate against each other"
    sizes = Counter(r.get("group") for r in rows)
    if max(sizes.values(), default=0) > 1:
        return "0 = the mean of the largest groups; the gaps between groups are the prior's"
    return "0 = the mean of all agents; every gap is the prior's"


def round_robin_table(result) -> str:
    """A :class:`~sevenrocks_env.arena.RoundRobinResult`: the win-rate matrix (row vs column,
    95% CI), the Bradley-Terry ratings and what each short name stands for."""
    names = result.agents
    short = dict(zip(names, short_names(names)))
    cell = {(g.agent_a, g.agent_b): g for g in result.games}
    label_width = max(12, *(len(s) for s in short.values())) + 2
    column = max(24, *(len(s) + 2 for s in short.values()))
    lines = ["match win rate of row vs column, 95% CI (Wilson over duplicate pairs)",
             " " * label_width + "".join(f"{short[n]:>{column}}" for n in names)]
    for row in names:
        text = f"{short[row]:<{label_width}}"
        for col in names:
            if (row, col) in cell:
                g = cell[(row, col)]
                value = f"{g.win_rate:.3f} [{g.ci95[0]:.3f},{g.ci95[1]:.3f}]"
            elif (col, row) in cell:
                g = cell[(col, row)]
                value = f"{1 - g.win_rate:.3f} [{1 - g.ci95[1]:.3f},{1 - g.ci95[0]:.3f}]"
            else:
                value = "-"
            text += f"{value:>{column}}"
        lines.append(text)
    lines += ["", f"Bradley-Terry rating (Elo scale; {centre_text(result.ratings)}) "
                  "+- standard error"]
    for r in sorted(result.ratings, key=lambda r: -r["rating"]):
        spread = f"({r['one_sided']}: set by the prior)" if r.get("one_sided") else \
            f"+- {r['stderr']:.1f}"
        lines.append(f"  {short[r['agent']]:<{label_width}}{rating_text(r, 1):>9} {spread}")
    specs = result.specs or names
    legend = [(short[n], spec) for n, spec in zip(names, specs) if spec != short[n]]
    if legend:
        lines += ["", "agents"] + [f"  {s:<{label_width}}{spec}" for s, spec in legend]
    return "\n".join(lines)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, description: str, enabled: bool):
    """A tqdm bar on stderr when ``enabled`` and tqdm is installed, else one that does nothing."""
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=description, unit="pair", file=sys.stderr)


__all__ = ["CARD_TEXT", "ENGINES", "MAX_NAME", "OPTIONAL_FIELDS", "RESULT_FIELDS",
           "MAX_CARD_NAME", "MAX_CARD_SPEC", "arena_command", "is_card_text", "named_spec",
           "pair_table", "progress_bar", "rating_text", "read_policy_result", "read_result",
           "round_robin_names", "round_robin_table", "short_name", "short_names"]
