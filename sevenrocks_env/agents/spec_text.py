"""One spelling per agent spec: ``search``, ``search:samples=64`` and ``search: win_bonus=5e1``
name the same agent, and :func:`canonical_spec` writes each of them ``search``.

Where a spec is an agent's identity -- a pair log continued by ``sevenrocks arena --log``, the
ratings ladder's saved pairings, two display names in one arena run -- :func:`same_spec`
compares the canonical forms, so a run is not refused for writing ``50`` where it wrote
``50.0`` before, or for giving its parameters in another order.  The canonical form is itself a
valid spec that builds the same agent:

- parameters in the order the agent declares them (``agents.AGENTS``,
  ``POLICY_SEARCH_PARAMS``, OpenSpiel's ``PARAMS``), each at most once;
- a parameter equal to its default is left out (``samples=64`` for ``search``), except the
  ones that choose the agent (``policy=`` and ``inference=``);
- an int as digits, a float as the shortest text that reads back as the same float, without a
  trailing ``.0`` (``50``, ``0.5``, ``1e-05``); strings and paths stripped of blanks;
- ``policy:PATH`` is written ``ckpt:PATH`` (the same loader);
- ``sample:policy=PATH`` keeps ``policy=`` and leaves out ``temperature=1``.

Paths are compared as written: ``ckpt:shipped`` and the shipped file's path are two spellings
this does not join (the pair log's SHA-256 of the files each spec loads tells whether the
weights are the same).
"""

from __future__ import annotations

import inspect
import re

from .base import parse_spec_params

#: ``name=spec``: a display name (letters, digits, ``_.+-``; no ``:``) before the first ``=``,
#: which the arena and the ladder take (:func:`sevenrocks_env.arena.split_name`).
NAMED_SPEC = re.compile(r"^\s*([A-Za-z0-9_.+-]+)\s*=\s*(\S.*)$")

#: Parameters that choose which agent a spec builds: kept even at a default value.
_CHOOSERS = ("policy", "inference")


def canonical_spec(spec: str) -> str:
    """The one spelling of ``spec`` (see the module docstring); ``ValueError`` for a spec
    :func:`~sevenrocks_env.agents.make_agent` refuses by its name or by a parameter's name,
    type or repetition (values out of an agent's range are its own to refuse, when it is
    built).  Loads nothing: a checkpoint path is not opened.  ``candidates=`` is kept even
    when it equals ``samples`` (its effective default): two such spellings are refused as two
    agents, never joined."""
    from . import AGENTS, CHECKPOINT_SPECS, OPENSPIEL_SPEC, POLICY_SEARCH_PARAMS, SAMPLE_PARAMS, \
        SAMPLE_SPEC, SB3_SPEC
    from . import _is_policy_search

    if not isinstance(spec, str):
        raise ValueError(f"agent spec must be a string, got {type(spec).__name__}")
    name, _, rest = spec.strip().partition(":")  # (as make_agent: "search :..." is no name)
    if name in CHECKPOINT_SPECS:
        return f"{CHECKPOINT_SPECS[0]}:{rest.strip()}"
    if name == SB3_SPEC:
        return f"{SB3_SPEC}:{rest.strip()}"
    if name == SAMPLE_SPEC:
        params = parse_spec_params(rest, SAMPLE_PARAMS, f"agent {SAMPLE_SPEC!r}")
        if "temperature" in params:   # a temperature make_agent refuses has no canonical form
            try:
                from ..policy import checked_temperature
            except ImportError as error:  # (torch is an extra): same_spec compares the text
                raise ValueError(f"{SAMPLE_SPEC}: needs torch ({error})") from None
            params["temperature"] = checked_temperature(params["temperature"])
        return _written(SAMPLE_SPEC, params, SAMPLE_PARAMS, {"temperature": 1.0})
    if name == OPENSPIEL_SPEC:
        return _canonical_openspiel(rest)
    if name not in AGENTS:
        raise ValueError(f"unknown agent spec {spec[:80]!r}")
    cls, types = AGENTS[name]
    if _is_policy_search(name, rest):
        try:
            from .policy_search import PolicySearchAgent
        except ImportError as error:  # (torch is an extra): same_spec then compares the text
            raise ValueError(f"search:policy needs PyTorch: pip install -e \".[train]\" "
                             f"({error})") from None
        cls, types = PolicySearchAgent, POLICY_SEARCH_PARAMS
    params = parse_spec_params(rest, types, f"agent {name!r}")
    return _written(name, params, types, _defaults(cls))


def same_spec(first, second) -> bool:
    """Whether two specs name the same agent: equal canonical forms, or (when either is not a
    spec this version reads, e.g. from an older log) equal text."""
    try:
        return canonical_spec(first) == canonical_spec(second)
    except ValueError:
        return first == second


def spec_of(head: str, values: dict, cls) -> str:
    """The canonical spec of the agent ``cls(**values)`` is (``values`` in its spec's parameter
    order; ``None``s, the defaults and parameters a spec cannot give left out): its ``name``,
    so that tables, logs and messages name the agent that played, not its class's default."""
    given = {key: value for key, value in values.items() if value is not None}
    return _written(head, given, given, _defaults(cls))


def _defaults(cls) -> dict:
    """``{parameter: default}`` of ``cls``'s constructor."""
    return {key: parameter.default
            for key, parameter in inspect.signature(cls).parameters.items()
            if parameter.default is not inspect.Parameter.empty}


def _canonical_openspiel(rest: str) -> str:
    """``openspiel:KIND[:params]`` written canonically (its parameter table is OpenSpiel's,
    read only when open-spiel is installed; without it the text is kept, stripped)."""
    kind, _, params_text = rest.strip().partition(":")
    try:
        from ..openspiel.bots import DEFAULTS, KINDS, PARAMS
    except ImportError:
        return f"openspiel:{rest.strip()}"
    kind = kind.strip()
    if kind not in KINDS:
        raise ValueError(f"unknown OpenSpiel bot {kind[:40]!r}")
    params = parse_spec_params(params_text, PARAMS, f"openspiel:{kind}")
    return _written(f"openspiel:{kind}", params, PARAMS, DEFAULTS)


def _written(head: str, params: dict, types: dict, defaults: dict) -> str:
    """``head[:key=value,...]``: ``params`` in ``types``' order, defaults left out."""
    kept = [f"{key}={value_text(params[key])}" for key in types if key in params
            and (key in _CHOOSERS or key not in defaults
                 or not _equal(params[key], defaults[key]))]
    return f"{head}:{','.join(kept)}" if kept else head


def _equal(value, default) -> bool:
    """A parameter's value equals its default (``5`` and ``5.0`` do; ``None`` equals nothing
    given)."""
    if isinstance(default, bool) or default is None:
        return False
    if isinstance(default, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(default)
    return value == default


def value_text(value) -> str:
    """A parameter's value as a canonical spec writes it (a float's every digit; -0.0 as 0)."""
    if isinstance(value, float):
        text = repr(value + 0.0)  # -0.0 is 0.0: one spelling per agent
        return text[:-2] if text.endswith(".0") else text
    return str(value).strip()


__all__ = ["canonical_spec", "same_spec", "spec_of", "value_text"]
