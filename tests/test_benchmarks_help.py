"""Every option a benchmark script's docstring names is one its parser takes (the ladder's help
told of a ``--reuse`` that did not exist; only ``--no-reuse`` did).  Options of the other
commands a docstring quotes are listed per script."""

import re

import pytest

from script_modules import ROOT
from test_benchmarks_tables import script

#: Options a script's docstring names that belong to another command it describes.
OTHER_COMMANDS = {
    "ablation": {"--set"},                                          # training.train's
    "algorithms": {"--config", "--set", "--opponent", "--opponents"},  # the trainers it runs
    "ladder": {"--json"},                                           # sevenrocks arena's
}
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # as the other script tests
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py"))


def help_text(module, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_options_a_script_s_docstring_names_exist(name, capsys):
    module = script(name)
    text = help_text(module, capsys)
    usage, options = text.split("\n\n", 1)[0], text[text.index("options:"):]
    taken = set(OPTION.findall(usage + options))
    named = set(OPTION.findall(module.__doc__ or ""))
    assert named - taken <= OTHER_COMMANDS.get(name, set()), sorted(named - taken)
    assert OTHER_COMMANDS.get(name, set()).isdisjoint(taken)  # still another command's


def test_every_script_is_checked():
    assert len(SCRIPTS) >= 18 and set(OTHER_COMMANDS) <= set(SCRIPTS)
