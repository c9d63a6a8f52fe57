"""Hostile training configs (issue 15): YAML files and ``--set`` values are untrusted.  Every bad
one is a :class:`ConfigError` in one short line naming the key and where it came from; nothing
is built from ``repr`` of a huge value, and reading is bounded (file size, nesting).  Rules about
several fields, output folders, ``init_from`` and checkpoint sizes: test_hostile_configs_runs.py."""

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from training import config as config_module
from training import config_yaml
from training.config import FIELDS, ConfigError, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
MESSAGE_LIMIT = 2000


def refused(*args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(*args, **kwargs)
    message = str(info.value)
    assert len(message) < MESSAGE_LIMIT and "\n" not in message, message[:300]
    return message


def write(tmp_path, content) -> Path:
    path = tmp_path / "config.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def alias_bomb(key: str) -> str:
    """A few hundred bytes of YAML whose value for ``key`` has 9**7 leaves when walked in full."""
    level = '["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    parts = [f"&a0 {level}"] + [f"&a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]"
                                 for n in range(1, 7)]
    return f"{key}: [" + ", ".join(parts) + "]\nseed: 3\n"


@pytest.mark.parametrize("key", ["opponents", "eval_agents", "hidden_sizes", "learning_rate",
                                 "run_name"])
def test_alias_bomb_in_a_known_key(tmp_path, key):
    text = alias_bomb(key)
    assert len(text) < 400
    message = refused(write(tmp_path, text))
    assert message.startswith(str(tmp_path / "config.yaml")) and key in message


@pytest.mark.parametrize("content,words", [
    (b"seed: 1\nrun_name: \xff\xfe\n", "not UTF-8"),
    ("hidden_sizes: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("seed: " + "9" * 5000 + "\n", "a number of 5,000 characters"),
    # PyYAML reads a base-60 integer in quadratic time: 160 kB of it took 4 s
    ("seed: " + "1:" * 30_000 + "1\n", "a number of 60,001 characters"),
    ("learning_rate: " + "1" * 200 + ".5\n", "a number of 202 characters"),
    ("seed: [1\n", "not valid YAML"),
    ("- 1\n- 2\n", "mapping"),
    ("? [1, 2]\n: 3\n", "not valid YAML"),
    ("1: 2\n", "unknown key"),
    ("learnin_rate: 0.1\n", "did you mean 'learning_rate'"),
    ("seed: 1\ntotal_steps: 4096\nseed: 7\n", "key 'seed' is given twice (line 3"),
    # YAML 1.1 reads these as other numbers than they show (8, 60, 90): refused, not misread
    ("seed: 010\n", "'010' is an octal number in YAML 1.1, read as 8"),
    ("eval_seed: -0123\n", "an octal number in YAML 1.1, read as -83"),
    ("seed: 1:00\n", "'1:00' is a base-60 number in YAML 1.1, read as 60"),
    ("max_minutes: 1:30.0\n", "base-60 number in YAML 1.1, read as 90.0"),
    ("seed: 0_10\n", "'0_10' is an octal number in YAML 1.1, read as 8"),  # '_' is no digit
    # a text field: the advice is to quote it (it said only to write the number otherwise)
    ("run_name: 010\n", "read as 8: write the number without ':' or a leading 0 (text: quote"),
    ("run_name: 2024-01-01\n", "got <date> (YAML reads it as a date: quote text, e.g. "
                               "run_name: \"...\")"),
    ("run_name: yes\n", "got True (YAML reads it as a boolean: quote text"),
    ("device: 12\n", "got 12 (YAML reads it as a number: quote text, e.g. device: "),
    # an empty mapping sets nothing: as a mistake as an empty file
    ("{}\n", "holds no settings"),
])
def test_bad_files(tmp_path, content, words):
    assert words in refused(write(tmp_path, content))


def test_a_float_with_a_leading_zero_is_read_as_written(tmp_path):
    """YAML 1.1 reads ``01.5`` as 1.5, as it shows: only integers have the octal surprise."""
    assert load_config(write(tmp_path, "win_reward: 01.5\n")).win_reward == 1.5


def test_only_a_mapping_is_a_config():
    with pytest.raises(ConfigError, match=r"^f\.pt: expected a mapping of key: value, got list$"):
        config_from_dict([("seed", 1)], "f.pt")


def test_spaces_around_a_quoted_spec_are_stripped():
    """``" greedy"`` is the spec ``greedy``: the pool's and the resume state's names match."""
    cfg = load_config(SMOKE, ['opponents=[" greedy", "past "]', 'eval_agents=[" random"]'])
    assert cfg.opponents == ["greedy", "past"] and cfg.eval_agents == ["random"]


def test_merge_keys_and_whole_numbers_in_e_notation_are_read(tmp_path):
    """``<<: *base`` was refused ("could not determine a constructor"), ``total_steps: 5e6``
    too (YAML 1.1 reads it as text), while ``learning_rate: 1e-4`` was read."""
    path = write(tmp_path, "<<: {seed: 3, total_steps: 5e6, gamma: 0.9}\nseed: 4\n")
    cfg = load_config(path)
    assert (cfg.seed, cfg.total_steps, cfg.gamma) == (4, 5_000_000, 0.9)  # own key wins
    assert load_config(SMOKE, ["total_steps=1e3", "seed=0x10"]).total_steps == 1000
    assert "valid integer" in refused(SMOKE, ["total_steps=5.5e0"])
    assert "given twice" in refused(write(tmp_path, "<<: {seed: 3}\nseed: 4\nseed: 5\n"))
    assert "key '<<' is given twice" in refused(write(tmp_path, "<<: {seed: 3}\n<<: {seed: 4}\n"))
    path = write(tmp_path, "<<: [{seed: 3}, {gamma: 0.9}]\n")  # one merge of several mappings
    assert (load_config(path).seed, load_config(path).gamma) == (3, 0.9)


def test_nesting_too_deep_to_parse(tmp_path):
    # deep enough that the YAML parser itself would exhaust the stack
    message = refused(write(tmp_path, "seed: " + "[" * 30_000 + "]" * 30_000 + "\n"))
    assert message.endswith("config.yaml: YAML nested too deeply"), message


def test_file_size_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(config_yaml, "MAX_CONFIG_BYTES", 64)
    assert "larger than" in refused(write(tmp_path, "# " + "x" * 100 + "\nseed: 1\n"))


@pytest.mark.parametrize("override,words", [
    ("learning_rate=nan", "learning_rate: must be a finite number"),
    ("learning_rate=.inf", "learning_rate: must be a finite number"),
    ("gamma=-.inf", "gamma: must be a finite number"),
    ("hidden_sizes=[100000000]", "hidden_sizes[0]"),
    ("hidden_sizes=[8,8,8,8,8,8,8,8,8]", "hidden_sizes"),
    ("num_matches=1e9", "num_matches"),
    ("num_matches=1000000000.0", "num_matches"),
    ("torch_threads=1e6", "torch_threads"),
    ("total_steps=" + "9" * 5000, "total_steps"),
    ("total_steps=" + "9" * 40, "total_steps"),
    ("seed=true", "seed"),
    ("seed=-1", "seed"),
    ("progress=1", "progress"),
    ("target=1000000", "target"),
    ("max_rounds=100000", "max_rounds"),
    ("run_name=../../escaped", "run_name: must be a plain folder name"),
    ("run_name=a/b", "run_name"),
    ("run_name=..", "run_name"),
    ("log_dir=", "log_dir"),
    ("critic=magic", "critic"),
    ("action_features=5", "action_features must be 0 or one of [1, 2, 3], got 5"),  # no version 5
    ("eval_agents=[[[[1]]]]", "eval_agents[0]"),
    ("opponents=[" + ",".join(["greedy"] * 40) + "]", "opponents"),
    ("eval_agents=[nosuchagent]", "eval_agents: unknown agent spec 'nosuchagent'"),
    # values that switch learning off without a word, or crash the run at its first evaluation
    ("eval_agents=[]", "eval_agents"),
    ("eval_agents=null", "eval_agents"),
    ("clip_coef=0", "clip_coef: Input should be greater than 0"),
    ("max_grad_norm=0", "max_grad_norm: Input should be greater than 0"),
    # a pickle can run code: never loaded because a config (or a checkpoint's config) names it
    ("eval_agents=[sb3:model.zip]", "eval_agents: sb3:PATH loads a pickle"),
    ("opponents=[sb3:model.zip]", "opponents: sb3:PATH loads a pickle"),
    ("opponents=[openspiel:ismcts]", "OpenSpiel bots cannot be training opponents"),
    ("opponents=[champ=greedy]", "NAME=SPEC names an agent in `sevenrocks arena`"),
    ('seed="5.0"', "seed: a whole number is written without quotes (quoted, it is text), got"),
    # (it said "Input should be a valid integer, got '5000000'")
    ('total_steps="5000000"', "total_steps: a whole number is written without quotes"),
    ('seed="5.5"', "seed: Input should be a valid integer, got '5.5'"),  # not a whole one
    ("hidden_sizes=['64']", "hidden_sizes[0]: a whole number is written without quotes"),
    # the shell ate the quotes: the list split a spec at its comma
    ("opponents=[greedy,sample:policy=shipped,temperature=0.5]",
     "opponents: 'temperature=0.5' looks like a parameter of the spec before it, split off at a "
     "comma: quote specs with commas, e.g. --set 'opponents=[\"sample:policy=shipped,"),
    # how many worlds a time-limited search samples depends on the machine: not reproducible
    ('opponents=["search:samples=8,time_limit=1"]', "cannot have a time_limit"),
    # a run name is a folder inside the roots: "." is the root itself, ".x" a hidden folder
    ("run_name=.", "run_name: must be a plain folder name"),
    ("run_name=.hidden", "run_name: must be a plain folder name"),
    # the whole text is the device, not a prefix of it
    ("device=cpux", "device: must be 'cpu', 'cuda' or 'cuda:N'"),
    ("device=cuda:0x", "device: must be"),
    # a set has no order (the opponents drawn, the layers of a network)
    ("opponents=!!set {greedy: null}", "opponents: must be a list (in order), not a set"),
    ("hidden_sizes=[]", "hidden_sizes: Value should have at least 1 item"),
    ("scorer_sizes=[]", "scorer_sizes: Value should have at least 1 item"),
    ("scorer_sizes=[0]", "scorer_sizes[0]: Input should be greater than or equal to 1"),
    ("log_dir=runs\x00x", "log_dir: String should match pattern"),
    ("init_temperature=0.5", "init_temperature sharpens the policy of init_from"),
    # 'past' is a training opponent (a snapshot of this run), not a baseline
    ("eval_agents=[past]", "eval_agents: unknown agent spec 'past'"),
    # a timestamp YAML 1.1 cannot build: one line, not a raw ValueError
    ("seed=2024-13-01", "seed: unreadable value (month must be in 1..12)"),
])
def test_bad_values_blame_set_and_name_the_key(override, words):
    message = refused(SMOKE, [override])
    assert message.startswith("--set") and words in message, message


def test_set_reads_names_as_text_and_an_empty_list_as_none(tmp_path):
    """``run_name=010`` was refused as an octal number and ``run_name=no`` as False (a name
    is text); ``opponents=`` was the list [''] ("unknown agent spec ''"), now none."""
    cfg = load_config(SMOKE, ["run_name=010", "init_from=", "opponents=", "opponent_fraction=0"])
    assert cfg.run_name == "010" and cfg.init_from == "" and cfg.opponents == []
    assert load_config(SMOKE, ["run_name=no"]).run_name == "no"
    assert load_config(SMOKE, ['run_name="yes"']).run_name == "yes"   # a quoted value unquoted
    message = refused(SMOKE, ["eval_agents="])   # none is refused, in words, as [] is
    assert message.startswith("--set") and "eval_agents" in message, message


def test_bad_set_key_blames_set_and_suggests():
    message = refused(SMOKE, ["num_matchs=3"])
    assert message == "--set: unknown key 'num_matchs'; did you mean 'num_matches'?"
    message = refused(SMOKE, ["zzzzqqq=3"])
    assert message.startswith("--set: unknown key") and "valid keys" in message


def test_yaml_value_errors_blame_the_file(tmp_path):
    message = refused(write(tmp_path, "seed: 1\nlearning_rate: .nan\n"))
    assert message.startswith(str(tmp_path / "config.yaml")) and "learning_rate" in message


#: JSON/YAML-like values of every type, huge and non-finite ones included.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from([80, 400, 5000]).map(lambda d: 10 ** d),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "../x", "a/b", ""]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FIELDS), values, max_size=4))
def test_any_values_are_a_valid_config_or_one_short_error(mapping):
    try:
        cfg = config_from_dict(dict(mapping, eval_agents=["random"], opponents=[]))
    except ConfigError as error:
        assert len(str(error)) < MESSAGE_LIMIT and "\n" not in str(error)
        return
    # accepted: then every float is finite and every size within its bounds
    for name, value in cfg.as_dict().items():
        if isinstance(value, float):
            assert math.isfinite(value), name
        if isinstance(value, int) and not isinstance(value, bool):
            assert abs(value) < 10 ** 12, name
    assert cfg.batch_size <= config_module.MAX_BATCH
    assert "/" not in cfg.run_name and ".." not in cfg.run_name


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FIELDS), st.text(max_size=40))
@example("opponents", "#")  # YAML reads an empty list; the file's opponent_fraction then fails
def test_any_set_text_is_accepted_or_refused_in_one_line(key, raw):
    try:
        load_config(SMOKE, [f"{key}={raw}"])
    except ConfigError as error:
        assert str(error).startswith("--set") and len(str(error)) < MESSAGE_LIMIT
        assert "\n" not in str(error)


def test_a_run_name_with_dot_dot_is_refused():
    with pytest.raises(ConfigError, match="run_name"):
        load_config(SMOKE, ["run_name=a..b"])


def test_a_number_of_exactly_max_number_chars_reads_one_more_is_refused():
    """MAX_NUMBER_CHARS is the longest number a config may
    write: 100 characters read, 101 are one short ConfigError."""
    _read_yaml = config_yaml._read_yaml
    assert config_yaml.MAX_NUMBER_CHARS == 100
    assert _read_yaml("seed: " + "1" * 100, "x") == {"seed": int("1" * 100)}
    with pytest.raises(ConfigError, match="a number of 101 characters"):
        _read_yaml("seed: " + "1" * 101, "x")
    with pytest.raises(ConfigError, match="a number of 101 characters"):
        _read_yaml("lr: 0." + "1" * 99, "x")


def test_a_config_file_over_64_kb_is_refused(tmp_path):
    """"files are bounded in size" (config_yaml's docstring):
    MAX_CONFIG_BYTES = 64 kB; one byte more is a ConfigError before YAML parses anything."""
    load_yaml_file = config_yaml.load_yaml_file

    ok = tmp_path / "ok.yaml"
    ok.write_text("seed: 1\n" + "#" * (64 * 1024 - 9) + "\n")
    assert ok.stat().st_size == 64 * 1024 and load_yaml_file(ok) == {"seed": 1}
    big = tmp_path / "big.yaml"
    big.write_text("seed: 1\n" + "#" * (64 * 1024 - 8) + "\n")
    with pytest.raises(ConfigError, match="larger than 65536 bytes"):
        load_yaml_file(big)


def test_opponents_without_a_fraction_are_refused_not_ignored(tmp_path):
    """``opponents: [heuristic]`` alone trained pure self-play without a word (the fraction's
    default is 0); a fraction given, 0 included, is the user's choice."""
    path = tmp_path / "c.yaml"
    path.write_text("opponents: [heuristic]\n")
    with pytest.raises(ConfigError, match=f"^{path}: opponents are listed but opponent_fraction "
                                          "is 0 \\(not given\\)"):
        load_config(path)
    assert load_config(path, ["opponent_fraction=0"]).opponent_fraction == 0
    assert load_config(path, ["opponent_fraction=0.5"]).opponents == ["heuristic"]
    path.write_text("seed: 3\n")
    with pytest.raises(ConfigError, match="^--set: opponents are listed"):
        load_config(path, ["opponents=[greedy]"])
    assert load_config(path, ["opponents=[]"]).opponents == []
    assert load_config("configs/default.yaml", ["opponent_fraction=0"]).opponents  # vector.md's


def test_config_default_and_smoke_name_the_packaged_configs_where_no_such_file_is(
        tmp_path, monkeypatch, capsys):
    """Outside a checkout (an install) configs/default.yaml is not there: ``--config default``
    reads the package's copy (training/configs links to configs/); a file of that name wins;
    a missing file's error names the packaged ones."""
    from training.config_yaml import PACKAGED_CONFIGS, config_file
    from training.train import main
    monkeypatch.chdir(tmp_path)
    for name in ("default", "smoke"):
        assert config_file(name) == PACKAGED_CONFIGS[name]
        packaged = PACKAGED_CONFIGS[name].read_bytes()
        assert packaged == (ROOT / "configs" / f"{name}.yaml").read_bytes()
    assert load_config(config_file("smoke")) == load_config(SMOKE)
    with pytest.raises(ConfigError, match=r"No such file.*: --config default \(make train's\) "
                                          r"or --config smoke$"):
        load_config(config_file("configs/default.yaml"))
    assert main(["--config", "default", "--set", "total_steps=-1"]) == 2  # the file was read
    assert capsys.readouterr().err.startswith("error: --set: total_steps: ")
    (tmp_path / "smoke").mkdir()  # a folder of that name is no config file
    assert config_file("smoke") == PACKAGED_CONFIGS["smoke"]
    (tmp_path / "default").write_text("seed: 3\n")
    assert config_file("default") == Path("default") and load_config("default").seed == 3
    assert not (tmp_path / "runs").exists() and not (tmp_path / "checkpoints").exists()


def test_a_key_set_twice_on_the_command_line_is_refused(tmp_path, capsys, monkeypatch):
    """``--set seed=1 --set seed=2`` trained with 2 without a word (a file's key given twice is
    refused for that reason); the scripts that layer values under the user's still may."""
    from training.train import main
    monkeypatch.chdir(tmp_path)
    assert main(["--config", str(SMOKE), "--set", "seed=1", "--set", "total_steps=64",
                 "--set", " seed =2"]) == 2
    assert capsys.readouterr().err == ("error: --set seed is given twice ('seed=1', then "
                                       "' seed =2'): give it once\n")
    assert main(["--resume", str(tmp_path / "none.pt"), "--set", "seed=1", "--set",
                 "seed=1"]) == 2
    assert "--set seed is given twice" in capsys.readouterr().err
    assert load_config(SMOKE, ["seed=1", "seed=2"]).seed == 2  # (a script's own layers)
    assert not any(tmp_path.iterdir())
