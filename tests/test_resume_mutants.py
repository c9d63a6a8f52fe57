"""Edges of the resume checks and the YAML config reader that a mutation audit found untested
(each test fails with one small change to the code it names, and passes on it)."""

import pytest

from training.config import ConfigError
from training.config_yaml import load_yaml_file


def _yaml_refused(tmp_path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_yaml_file(path)
    return str(info.value)


# -- training.config_yaml -------------------------------------------------------------------

def test_a_null_key_given_twice_is_refused(tmp_path):
    """``null`` (``~``) is a key like any other scalar: given twice, plain YAML would keep the
    last value without a word."""
    message = _yaml_refused(tmp_path, "~: 1\nnull: 2\n")
    assert "key None is given twice (line 2" in message, message
    path = tmp_path / "ok.yaml"
    path.write_text("~: 1\nseed: 2\n")
    assert load_yaml_file(path) == {None: 1, "seed": 2}


def test_a_long_yaml_problem_is_cut_to_120_characters(tmp_path):
    """The parser's problem text is cut (here a base-60 number of 99 characters, whose value
    read has about 90 digits): the message stays one short line naming where."""
    message = _yaml_refused(tmp_path, "seed: " + "1:" * 49 + "1\n")
    _, where = message.split(" is not valid YAML: ", 1)
    problem, _, position = where.rpartition(" (line ")
    assert "base-60" in problem and position == "1, column 7)", message
    assert len(problem) == 120, message


@pytest.mark.parametrize("text, where", [("seed: 3\n# comment\x07\n", "#x0007 is not allowed "
                                         "(line 2, column 10)"),
                                         ("\x1b[31m: 1\n", "#x001b is not allowed (line 1, "
                                         "column 1)"),
                                         # YAML's other line breaks count as its marks count them
                                         ("seed: 1\rbatch: 2\u2028# \x07\r", "#x0007 is not "
                                          "allowed (line 3, column 3)")])
def test_a_control_character_is_named_with_its_line(tmp_path, text, where):
    """PyYAML's reader error has no problem text or mark: the message said only
    'ReaderError'."""
    message = _yaml_refused(tmp_path, text)
    assert message.endswith(f" is not valid YAML: character {where}"), message


def test_a_self_referencing_value_is_read_and_refused_naming_its_key(tmp_path):
    """A mapping's values are built lazily (``deep=False``), as ``yaml.safe_load`` does: an
    anchor that holds itself is read, and the config refuses it naming the key (built eagerly,
    PyYAML calls it an "unconstructable recursive node" at a line and column instead)."""
    from training.config import load_config
    path = tmp_path / "config.yaml"
    path.write_text("opponents: &x [*x]\n")
    loaded = load_yaml_file(path)
    assert loaded["opponents"][0] is loaded["opponents"]
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "opponents[0]" in str(info.value) and "recursive" not in str(info.value)


# -- training.resume: the engine's matches in progress --------------------------------------

class _Engine:
    """An engine whose ``load_state_dict`` raises ``error`` (what a damaged state makes the
    real engines raise: ``ValueError``, or ``TypeError``/``KeyError`` from a wrong shape)."""

    def __init__(self, error=None):
        self.error, self.loaded = error, None

    def load_state_dict(self, state):
        if self.error is not None:
            raise self.error
        self.loaded = state


@pytest.mark.parametrize("error", [ValueError("bad"), TypeError("bad"), KeyError("bad")])
def test_an_engine_state_the_engine_cannot_load_is_a_checkpoint_error(error):
    from sevenrocks_env.policy import CheckpointError
    from training.resume import load_engine
    with pytest.raises(CheckpointError, match=r"f\.pt: resume piece 'engine' is unusable"):
        load_engine(_Engine(error), {}, "f.pt")
    engine = _Engine()
    load_engine(engine, {"x": 1}, "f.pt")
    assert engine.loaded == {"x": 1}


@pytest.mark.parametrize("saved, blamed", [
    ({"opponents": ["greedy"]}, "opponents"),   # --set changed them: the config is to blame
    ({"opponents": ["random"]}, "engine"),      # the same opponents: the file is damaged
    ({}, "engine"),                             # a run from before opponents were saved
    ({"opponents": None}, "engine"),
])
def test_an_unloadable_engine_blames_set_opponents_only_when_they_changed(saved, blamed):
    from sevenrocks_env.policy import CheckpointError
    from training.config import config_from_dict
    from training.resume import restore_engine
    cfg = config_from_dict({"opponents": ["random"]})
    resume = {"engine": {}, "config": saved}
    with pytest.raises((CheckpointError, ConfigError)) as info:
        restore_engine(_Engine(ValueError("no such opponent")), resume, cfg, "f.pt")
    if blamed == "opponents":
        assert type(info.value) is ConfigError and info.value.key == "opponents"
        assert "--set opponents" in str(info.value)
    else:
        assert type(info.value) is CheckpointError, str(info.value)
        assert "resume piece 'engine'" in str(info.value)
