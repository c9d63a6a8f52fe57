"""An int past 4300 digits given to a public entry point: the project's own error, naming the
argument.  Python refuses to format such an int (``f"{10 ** 5000}"`` raises ``ValueError:
Exceeds the limit (4300 digits) for integer string conversion``), so a message that quoted the
value with ``{value!r}`` was replaced by Python's, which names nothing; the value is quoted
with ``checks.shown`` (``<int of N bits>``) instead."""

import argparse

import pytest

torch = pytest.importorskip("torch")

H = 10 ** 5000
DIGITS = "1" + "0" * 5000  # the same number as text (a spec's, a command line's)
MAX_MESSAGE = 1000


def _single_agent(**options):
    from sevenrocks_env.single_agent import SingleAgentEnv
    return SingleAgentEnv(**options)


def _single_agent_step(illegal_action):
    env = _single_agent(illegal_action=illegal_action)
    env.reset(seed=0)
    env.step(H)


def _search(**options):
    from sevenrocks_env.agents.search import SearchAgent
    SearchAgent(**options)


def _policy_search(**options):
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    PolicySearchAgent(**options)  # refused before the policy is loaded


def _inference(**options):
    from sevenrocks_env.agents.inference import InferenceSearch
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    searcher = PolicySearchAgent.__new__(PolicySearchAgent)  # its settings only, no network
    searcher.samples, searcher.rollout, searcher.name = 4, "argmax", "search:policy"
    InferenceSearch(searcher, **options)


def _make_agent(spec):
    from sevenrocks_env.agents import make_agent
    make_agent(spec)


def _evaluate(**settings):
    from sevenrocks_env import arena
    arena.evaluate("random", "greedy", **({"pairs": 1} | settings))


def _round_robin(**settings):
    from sevenrocks_env import arena
    arena.round_robin(["random", "greedy"], **({"pairs": 1} | settings))


def _public_round(opener=0, scores=(0, 0), actions=()):
    from sevenrocks_env.public_round import PublicRound
    PublicRound(opener, scores, actions).checked()


def _picture(observer):
    from sevenrocks_env.render.picture import draw_picture
    from sevenrocks_env.rules import Match
    draw_picture(Match.new(seed=0), observer=observer)


def _openspiel():
    return pytest.importorskip(
        "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the "
                          "[openspiel] extra)")


def _game(params):
    _openspiel()
    from sevenrocks_env.openspiel.game import SevenRocksGame
    return SevenRocksGame(params)


def _observer(params):
    _game({}).make_py_observer(None, params)


def _resample(player):
    _game({}).new_initial_state().resample_hidden(player, None)


def _agent_bot(player):
    _openspiel()
    from sevenrocks_env.agents import GreedyAgent
    from sevenrocks_env.openspiel.agent_bot import AgentBot
    AgentBot(_game({}), player, GreedyAgent())


def _openspiel_agent(**options):
    _openspiel()
    from sevenrocks_env.openspiel.bots import OpenSpielAgent
    OpenSpielAgent(**options)


def _argument(text):
    from sevenrocks_env import arguments
    arguments.count(text)


def _soft_targets(temperature):
    from training import distill
    distill.soft_targets(torch.zeros(1, 4), torch.ones(1, 4, dtype=torch.bool), temperature)


def _save_labels(tmp_path, seed):
    from training import distill_labels
    distill_labels.save_labels(tmp_path / "labels.npz", {}, "greedy", seed=seed)


CASES = [
    ("SingleAgentEnv seat", lambda _: _single_agent(seat=H), ValueError, "seat must be 0-3"),
    ("SingleAgentEnv illegal_action", lambda _: _single_agent(illegal_action=H), ValueError,
     "illegal_action must be one of"),
    ("SingleAgentEnv skip_forced", lambda _: _single_agent(skip_forced=H), ValueError,
     "skip_forced must be True or False"),
    ("SingleAgentEnv opponents", lambda _: _single_agent(opponents=(H,)), ValueError,
     "opponents: one agent spec, or two"),
    ("SingleAgentEnv step", lambda _: _single_agent_step("terminate"), ValueError,
     "action <int of 16610 bits> of seat 2 is outside the action space"),
    ("SingleAgentEnv step raise", lambda _: _single_agent_step("raise"), ValueError,
     "action <int of 16610 bits> of seat 2 is outside the action space"),
    ("search samples", lambda _: _search(samples=H), ValueError, "search: samples must be"),
    ("search time_limit", lambda _: _search(time_limit=H), ValueError,
     "search: time_limit must be"),
    ("search rollout", lambda _: _search(rollout=H), ValueError, "search: rollout must be"),
    ("search win_bonus", lambda _: _search(win_bonus=H), ValueError,
     "search: win_bonus must be"),
    ("search spec samples", lambda _: _make_agent(f"search:samples={DIGITS}"), ValueError,
     "samples"),
    ("search:policy samples", lambda _: _policy_search(samples=H), ValueError,
     "search:policy: samples must be"),
    ("search:policy rollout", lambda _: _policy_search(rollout=H), ValueError,
     "search:policy: rollout must be"),
    ("search:policy prior", lambda _: _policy_search(prior=H), ValueError,
     "search:policy: prior must be"),
    ("search:policy win_bonus", lambda _: _policy_search(win_bonus=-H), ValueError,
     "search:policy: win_bonus must be"),
    ("search:policy threads", lambda _: _policy_search(threads=H), ValueError,
     "search:policy: threads must be"),
    ("search:policy reach", lambda _: _policy_search(reach=H), ValueError,
     "search:policy: reach must be"),
    ("search:policy horizon", lambda _: _policy_search(horizon=H), ValueError,
     "search:policy: horizon must be"),
    ("inference power", lambda _: _inference(power=H), ValueError,
     "inference (the weights' power) must be"),
    ("inference candidates", lambda _: _inference(candidates=H), ValueError,
     "inference: candidates must be"),
    ("evaluate pairs", lambda _: _evaluate(pairs=H), ValueError, "pairs must be in"),
    ("evaluate seed", lambda _: _evaluate(seed=H), ValueError, "seed must be in"),
    ("evaluate target", lambda _: _evaluate(target=-H), ValueError, "target must be in"),
    ("evaluate max_rounds", lambda _: _evaluate(max_rounds=H), ValueError,
     "max_rounds must be in"),
    ("evaluate workers", lambda _: _evaluate(workers=H), ValueError, "workers must be an int"),
    ("round_robin pairs", lambda _: _round_robin(pairs=H), ValueError, "pairs must be in"),
    ("PublicRound opener", lambda _: _public_round(opener=H), ValueError,
     "history: opener must be"),
    ("PublicRound scores", lambda _: _public_round(scores=(0, H)), ValueError,
     "history: scores must be"),
    ("PublicRound action", lambda _: _public_round(actions=(4, H)), ValueError,
     "history: action 1 must be"),
    ("draw_picture observer", lambda _: _picture(H), ValueError, "observer must be a seat"),
    ("openspiel game target", lambda _: _game({"target": H}), ValueError,
     "python_sevenrocks: target must be"),
    ("openspiel game rounds", lambda _: _game({"rounds": H}), ValueError,
     "python_sevenrocks: rounds must be"),
    ("openspiel game max_rounds", lambda _: _game({"max_rounds": H}), ValueError,
     "python_sevenrocks: max_rounds must be"),
    ("openspiel game unknown", lambda _: _game({H: 1}), ValueError,
     "python_sevenrocks: unknown parameters"),
    ("openspiel observer params", lambda _: _observer({"x": H}), ValueError,
     "observation parameters are not supported"),
    ("openspiel resample player", lambda _: _resample(H), ValueError,
     "resample_from_infostate: player must be"),
    ("AgentBot player", lambda _: _agent_bot(H), ValueError, "AgentBot: player must be a seat"),
    ("OpenSpielAgent kind", lambda _: _openspiel_agent(kind=H), ValueError,
     "openspiel: unknown bot"),
    ("OpenSpielAgent sims", lambda _: _openspiel_agent(sims=H), ValueError,
     "openspiel:ismcts: sims must be"),
    ("OpenSpielAgent uct_c", lambda _: _openspiel_agent(uct_c=H), ValueError,
     "openspiel:ismcts: uct_c must be"),
    ("OpenSpielAgent rollouts", lambda _: _openspiel_agent(rollouts=H), ValueError,
     "openspiel:ismcts: rollouts must be"),
    ("arguments int", lambda _: _argument(H), argparse.ArgumentTypeError,
     "must be an int in [1, "),
    ("arguments text", lambda _: _argument(DIGITS), argparse.ArgumentTypeError,
     "must be an int in [1, "),
    ("distill temperature", lambda _: _soft_targets(H), ValueError, "temperature must be in"),
    ("distill_labels seed", lambda tmp_path: _save_labels(tmp_path, H), ValueError,
     "a collection's seed is in"),
]


@pytest.mark.parametrize("call, error, words", [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_a_huge_int_gets_the_projects_error_naming_the_argument(call, error, words, tmp_path):
    with pytest.raises(error) as info:
        call(tmp_path)
    message = str(info.value)
    assert words in message, message[:300]
    assert "Exceeds the limit" not in message and len(message) < MAX_MESSAGE, message[:300]
