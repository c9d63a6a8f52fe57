"""Small API edges a code review found: ``describe_action`` of a non-action (-1 read as
``6|6 south``), ``is_legal`` of a non-match (an AttributeError from inside), and the one
winner-sign rule of the reward formula."""

import numpy as np
import pytest

from sevenrocks_env import rules
from sevenrocks_env.rewards import team0_reward, winner_sign
from sevenrocks_env.tiles import KNOCK, describe_action


@pytest.mark.parametrize("action", [-1, 113, True, 5.0, "5"])
def test_describe_action_refuses_what_is_no_action(action):
    with pytest.raises(ValueError, match="not an action 0-112"):
        describe_action(action)


def test_describe_action_names_every_action():
    assert describe_action(5) == "0|1 east" and describe_action(np.int64(5)) == "0|1 east"
    assert describe_action(KNOCK) == "knock" and describe_action(111) == "6|6 south"


@pytest.mark.parametrize("match", [None, "match", 3])
def test_is_legal_of_a_non_match_is_a_type_error_naming_it(match):
    with pytest.raises(TypeError, match="match must be a rules.Match, got"):
        rules.is_legal(match, 3)


def test_the_winner_sign_is_team_0_s():
    assert [winner_sign(w) for w in (0, 1, None)] == [1, -1, 0]
    assert team0_reward(10, winner_sign(1), 0.01, 1.0) == pytest.approx(-0.9)
