"""``training.ship``'s card and arena: a policy file without run facts ships, the card holds
the shipped network's checked config and a distilled policy's provenance (a bad distillation
record is refused), extra results are checked and labelled, the batched arena plays unless
asked for the process pool, and the card's rows and bars keep the arena's numbers.  Refusals
before playing: ``test_ship_refusals.py`` (the card's format: ``test_model_card.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from policy_files import MESSAGE_LIMIT, save_policy  # noqa: E402
from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402


def test_ship_writes_a_card_for_a_policy_file_without_run_facts(tmp_path, monkeypatch):
    """A file with no wall time or config (policy_entries only) ships, its card saying so; the
    file is read once, so what was checked is what is exported."""
    from training import checkpoint, ship as ship_module
    from training.ship import main as ship

    reads = []
    for module in (checkpoint, ship_module):
        monkeypatch.setattr(module, "read_checkpoint",
                            lambda path, read=module.read_checkpoint: reads.append(path) or read(path))
    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    card = (out.parent / "MODEL_CARD.md").read_text()
    assert "| training wall time | unknown |" in card and "| arena played on | " in card
    assert reads == [str(source)]


def test_ship_s_card_holds_the_shipped_network_s_checked_config(tmp_path):
    """The card's model_config is the exported network's own (an oracle-critic run's policy
    ships without a value head, and its card says so), not the file's dict copied as it was."""
    from sevenrocks_env.policy import read_checkpoint
    from training.ship import main as ship

    data = dict(policy_entries(PolicyNet([16], action_features=2), 0), config={"critic": "oracle"})
    source = save_checkpoint(tmp_path / "run.pt", data)
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    card = json.loads((out.parent / "model_card.json").read_text())
    shipped = {"hidden_sizes": [16], "action_features": 2, "value_head": False}
    assert card["model_config"] == read_checkpoint(out)["model_config"] == shipped


DISTILLED = {"teacher": "search:policy=shipped,samples=16", "labels": 315_078,
             "holdout_agreement": 0.7634, "args": {"seed": 1}}


def test_ship_puts_a_distilled_policy_s_provenance_on_its_card(tmp_path):
    from training.ship import main as ship

    data = policy_entries(PolicyNet([16]), 5_000)
    data.update(distill=DISTILLED, config={"seed": 3}, wall_time=600.0)
    source = save_checkpoint(tmp_path / "student.pt", data)
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    card = json.loads((out.parent / "model_card.json").read_text())
    # the student's settings its run kept (here only --seed): checked, and on the card
    assert card["distill"] == {**{k: DISTILLED[k] for k in ("teacher", "labels",
                                                           "holdout_agreement")},
                               "settings": {"seed": 1}}
    assert card["config"] == {"seed": 3} and card["train_minutes"] == 10.0
    markdown = (out.parent / "MODEL_CARD.md").read_text()
    assert ("| distillation | then fine-tuned toward `search:policy=shipped,samples=16` on "
            "315,078 labels (`training.distill --seed 1`; held-out agreement 0.763) |") in markdown
    assert ("| training wall time | 10.0 min; " in markdown
            and "; the PPO run only, not the collection of the distillation's labels |" in markdown)
    # the shipped file keeps the record: shipping it again keeps the card's distillation row
    again = tmp_path / "again" / "policy.pt"
    assert ship([str(out), "--out", str(again), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    assert "| distillation | then fine-tuned toward" in (again.parent / "MODEL_CARD.md").read_text()
    # too few labels to hold any out: no agreement, and the card's JSON stays JSON
    data["distill"] = {**DISTILLED, "holdout_agreement": float("nan")}
    source = save_checkpoint(tmp_path / "small.pt", data)
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    card = json.loads((out.parent / "model_card.json").read_text(),
                      parse_constant=lambda name: pytest.fail(f"{name} in the card's JSON"))
    assert card["distill"]["holdout_agreement"] is None
    assert "held-out agreement not measured) |" in (out.parent / "MODEL_CARD.md").read_text()
    # a student of a student: every round, oldest first
    earlier = {"teacher": "search:samples=4", "labels": 900, "holdout_agreement": None}
    data["distill"] = {**DISTILLED, "earlier": [earlier]}
    source = save_checkpoint(tmp_path / "second.pt", data)
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    assert json.loads((out.parent / "model_card.json").read_text())["distill"]["earlier"] == [
        earlier]
    assert ("| distillation | then fine-tuned toward `search:samples=4` on 900 labels "
            "(`training.distill`; held-out agreement not measured); then fine-tuned toward "
            "`search:policy=shipped,samples=16` on 315,078 labels (`training.distill --seed 1`") \
        in (out.parent / "MODEL_CARD.md").read_text()


@pytest.mark.parametrize("distill", [
    "a text", {**DISTILLED, "labels": "many"}, {**DISTILLED, "labels": 0},
    {**DISTILLED, "labels": 10 ** 9}, {**DISTILLED, "teacher": "x" * 5000},
    {**DISTILLED, "holdout_agreement": 2.0}, {k: v for k, v in DISTILLED.items() if k != "teacher"},
    {**DISTILLED, "teacher": "search | x"}, {**DISTILLED, "teacher": "a\n# Owned"},
    {**DISTILLED, "earlier": [{**DISTILLED, "labels": 0}]}, {**DISTILLED, "earlier": "x"},
    {**DISTILLED, "earlier": [DISTILLED] * 64},
    {**DISTILLED, "labels": True}, {**DISTILLED, "holdout_agreement": -0.1},
    {**DISTILLED, "holdout_agreement": True},
    # the student's settings a card shows
    {**DISTILLED, "args": "x"}, {**DISTILLED, "args": {"epochs": 10 ** 9}},
    {**DISTILLED, "args": {"seed": -1}},
    {**DISTILLED, "args": {"learning_rate": float("nan")}}, {**DISTILLED, "args": {"epochs": True}},
    {**DISTILLED, "args": {"hidden_sizes": [0]}}, {**DISTILLED, "args": {"temperature": -1.0}},
    {**DISTILLED, "args": {"batch_size": 2.0}},
    {**DISTILLED, "earlier": [{**DISTILLED, "settings": {"learning_rate": 0.0}}]},
])
def test_ship_refuses_a_bad_distillation_record(tmp_path, capsys, distill):
    from training.ship import main as ship

    data = policy_entries(PolicyNet([16]), 0)
    data["distill"] = distill
    source = save_checkpoint(tmp_path / "student.pt", data)
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0"]) == 2
    err = capsys.readouterr().err
    assert ("'distill' must hold" in err or "'distill' 'earlier' must be a list" in err
            or "'distill' 'args'" in err), err
    assert len(err) < MESSAGE_LIMIT, err[:300]
    assert not out.parent.exists()


def test_ship_checks_extra_results_before_playing_and_uses_a_real_one(tmp_path, capsys):
    from sevenrocks_env.arena import evaluate
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    other = save_policy(tmp_path / "other.pt")  # another network's weights
    good = tmp_path / "good.json"
    good.write_text(json.dumps(evaluate(f"ckpt:{source}", "greedy", 2, seed=1).as_dict()))
    real = json.loads(good.read_text())
    out = tmp_path / "shipped" / "policy.pt"
    numbers = tmp_path / "numbers.pt"  # the policy's file with numbers in place of its weights
    data = torch.load(source, weights_only=True)
    torch.save(data | {"model": {key: 5 for key in data["model"]}}, numbers)
    for content, words in (("[1, 2]", "JSON object"), ("{", "not a readable"),
                           (json.dumps(real) + " " * 1_000_000, "larger than"),
                           (json.dumps({**real, "spec_a": f"ckpt:{numbers}"}), "does not have "
                                                                              "the weights"),
                           (json.dumps({**real, "win_rate": 7}), "win_rate"),
                           (json.dumps({**real, "agent_b": None}), "agent_b"),
                           # a result of another agent, or numbers edited by hand
                           (json.dumps({**real, "spec_a": "heuristic"}), "spec_a"),
                           (json.dumps({**real, "spec_a": f"ckpt:{other}"}), "does not have the "
                                                                            "weights"),
                           (json.dumps({**real, "target": 50}), "target"),
                           (json.dumps({**real, "ci95": [0.0, 0.1]}), "Wilson interval"),
                           (json.dumps({**real, "matches": 7}), "2 x pairs")):
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                     "--extra-result", str(bad)]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err[:300]
        assert not out.parent.exists()
    alias = tmp_path / "alias.json"  # policy:PATH is the same agent as ckpt:PATH
    alias.write_text(json.dumps({**real, "spec_a": f"policy:{source}"}))
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random", "--extra-result", str(good), "--extra-result",
                 str(alias)]) == 0
    card = json.loads((out.parent / "model_card.json").read_text())
    assert [row["opponent"] for row in card["arena"]] == ["random", "greedy", "greedy"]
    assert card["arena"][1]["source"] == str(good)  # labelled with where it came from
    played = [c for c in card["commands"] if c.startswith("sevenrocks arena") and "--json" not in c]
    assert len(played) == 1 and " random --pairs 1 --seed " in played[0], card["commands"]
    assert "| greedy (from `good.json`) |" in (out.parent / "MODEL_CARD.md").read_text()


def test_ship_plays_the_batched_arena_by_default_and_the_pool_on_request(tmp_path):
    from sevenrocks_env.arena import evaluate
    from sevenrocks_env.arena_batched import evaluate_batched
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    for arena, play in (("batched", evaluate_batched), ("pool", evaluate)):
        extra = [] if arena == "batched" else ["--arena", "pool"]
        assert ship([str(source), "--out", str(out), "--pairs", "3", "--search-pairs", "0",
                     "--agents", "greedy", "--seed", "5", *extra]) == 0
        card = json.loads((out.parent / "model_card.json").read_text())
        expected = play(f"ckpt:{out}", "greedy", 3, seed=5)
        assert card["arena_kind"] == arena
        assert (card["arena"][0]["win_rate"], card["arena"][0]["mean_margin"]) == (
            expected.win_rate, round(expected.mean_margin, 1))
        assert card["commands"][2].endswith("--seed 5" + (" --batched" if arena == "batched"
                                                          else ""))
        heading = (out.parent / "MODEL_CARD.md").read_text().split("## Arena results (")[1]
        assert heading.startswith("batched arena, ") == (arena == "batched")
    # an opponent with a display name, as in the arena (named rows keep the name)
    assert ship([str(source), "--out", str(out), "--pairs", "2", "--search-pairs", "0",
                 "--agents", "g=greedy"]) == 0
    card = json.loads((out.parent / "model_card.json").read_text())
    assert card["arena"][0]["win_rate"] == \
        evaluate_batched(f"ckpt:{out}", "g=greedy", 2, seed=2025).win_rate


def test_ship_s_arena_tables_name_the_shipped_path_not_the_staged_one(tmp_path, capsys):
    """The policy is played from a staging folder beside --out; what ship prints (and its card)
    names the policy at --out, as the user gave it."""
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 "--agents", "random"]) == 0
    printed = capsys.readouterr().out
    assert re.search(rf"A = policy +ckpt:{re.escape(str(out))}\n", printed), printed
    written = [(out.parent / name).read_text() for name in ("model_card.json", "MODEL_CARD.md")]
    assert not any(".ship-" in text for text in [printed, *written])


def test_a_card_row_keeps_the_arena_s_numbers_in_their_places():
    from types import SimpleNamespace

    from training.ship import _row

    result = SimpleNamespace(spec_b="heuristic", pairs=1000, matches=2000, win_rate=0.61237,
                             ci95=(0.58123, 0.98947), mean_margin=12.345, rounds_per_match=3.456,
                             seed=2025, seconds_per_decision=(0.000123, 0.5))
    row = _row("h=heuristic", result)
    assert row == {
        "opponent": "h=heuristic", "spec": "heuristic", "pairs": 1000, "matches": 2000,
        "win_rate": 0.61237, "ci95": [0.58123, 0.98947], "mean_margin": 12.3,
        "rounds_per_match": 3.46, "seed": 2025, "ms_per_decision_policy": 0.123}
    # rounded once, as the arena prints it: 0.989 (rounded twice, 0.9895 then 0.990)
    from training.model_card import card_markdown
    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "shipped"
    card = dict(json.loads((folder / "model_card.json").read_text()), arena=[row])
    assert "| 0.612 | [0.581, 0.989] |" in card_markdown(card)


def test_the_bars_judge_the_spec_a_row_played_not_its_name():
    """``weak`` played random: judged against random's bar; ``heuristic=greedy`` played
    greedy, not heuristic; an older row without ``spec`` is judged by its opponent's spec."""
    from training.model_card import card_markdown

    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "shipped"
    card = json.loads((folder / "model_card.json").read_text())
    row = {"pairs": 1000, "matches": 2000, "win_rate": 0.9, "ci95": [0.88, 0.92],
           "mean_margin": 1.0, "rounds_per_match": 3.0, "seed": 1}
    card["arena"] = [{**row, "opponent": "weak", "spec": "random"},
                     {**row, "opponent": "heuristic=greedy", "spec": "greedy"},
                     {**row, "opponent": "old=heuristic"}]
    bars = [line for line in card_markdown(card).splitlines() if line.startswith("| vs ")]
    assert [line.split(" >=")[0] for line in bars] == ["| vs random", "| vs greedy",
                                                        "| vs heuristic"], bars


def test_the_card_says_self_play_only_of_a_run_that_played_itself():
    """A best response (``opponent_fraction`` 1) never played itself: its card names what it
    was trained against; the shipped card's first line stays as it is."""
    from training.model_card import card_markdown

    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "shipped"
    card = json.loads((folder / "model_card.json").read_text())
    shipped = card_markdown(card).splitlines()[2:4]
    assert shipped == (folder / "MODEL_CARD.md").read_text().splitlines()[2:4]
    assert shipped[0].startswith("A PPO self-play policy for Seven Rocks")
    card["config"] = {**card["config"], "opponents": ["ckpt:shipped"], "opponent_fraction": 1.0}
    assert card_markdown(card).splitlines()[2].startswith(
        "A PPO policy trained against `ckpt:shipped` only for Seven Rocks")


def test_same_policy_is_false_for_a_file_missing_one_of_the_weights(tmp_path):
    from training.checkpoint import policy_only
    from training.ship import same_policy

    data = policy_entries(PolicyNet([16]), 0)
    path = save_checkpoint(tmp_path / "p.pt", data)
    assert same_policy(f"ckpt:{path}", policy_only(data))
    cut = dict(data, model={k: v for i, (k, v) in enumerate(data["model"].items()) if i})
    partial = save_checkpoint(tmp_path / "cut.pt", cut)
    assert not same_policy(f"ckpt:{partial}", policy_only(data))


def test_the_card_s_training_command_comes_from_the_run_s_config(tmp_path):
    """Every card said `make train`, which does not train a smoke run's policy."""
    from training.ship import main as ship

    config = {"critic": "oracle", "hidden_sizes": [16], "seed": 3, "run_name": "x"}
    data = dict(policy_entries(PolicyNet([16], action_features=2), 0), config=config)
    source = save_checkpoint(tmp_path / "run.pt", data)
    out = tmp_path / "shipped" / "policy.pt"
    # (no engine field: a run from before it, which played the python engine, as --resume reads)
    for given, command in ((None, "python -m training.train --config configs/default.yaml "
                                  "--set engine=python --set 'hidden_sizes=[16]' --set seed=3"),
                           ("my command", "my command")):
        extra = [] if given is None else ["--train-command", given]
        assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                     "--agents", "random", *extra]) == 0
        card = json.loads((out.parent / "model_card.json").read_text())
        assert card["commands"][0] == command


def test_a_training_command_trains_the_run_s_config():
    import shlex

    from training.config import load_config
    from training.ship import DEFAULT_CONFIG, training_command

    def run(config):  # a checkpoint's run facts
        return {"config": config, "model_config": {"action_features": 2}}

    default = load_config(DEFAULT_CONFIG).model_dump(mode="json")
    assert training_command(run(default), False) == "make train"
    assert training_command(run(dict(default, run_name="mine", progress=False)), True) == (
        "make train   # then python -m training.distill (see the card's 'distill')")
    # a run from before the critic field trained the shared critic (as --resume reads it)
    older = {key: value for key, value in default.items() if key != "critic"}
    assert training_command(run(older), False).endswith("--set critic=shared")
    assert training_command(run({}), False).startswith("not recorded")
    smoke = load_config(DEFAULT_CONFIG.parent / "smoke.yaml").model_dump(mode="json")
    words = shlex.split(training_command(run(smoke), False))
    assert words[:5] == ["python", "-m", "training.train", "--config", "configs/default.yaml"]
    sets = [words[i + 1] for i, word in enumerate(words) if word == "--set"]
    assert len(sets) > 5 and len(words) == 5 + 2 * len(sets)
    again = load_config(DEFAULT_CONFIG, overrides=sets).model_dump(mode="json")
    assert {key for key in smoke if smoke[key] != again[key]} <= {"run_name", "progress"}


def test_a_round_s_init_the_card_cannot_show_is_left_out_and_an_unpinned_one_says_so():
    """An init path holding ``|`` (legal for --init) was refused with the whole file, after
    the run; an init recorded before inits were pinned names a file that may have changed
    since (``shipped``); every digit of a learning rate is the option as given."""
    from training.distill_record import distill_facts
    from training.model_card import rounds_text
    record = {**DISTILLED, "args": {"init": "runs|v2/init.pt (network sha256 0123456789abcdef)",
                                    "learning_rate": 3.14159265e-4, "epochs": 6}}
    facts = distill_facts({"distill": record}, "f.pt")
    assert facts["settings"] == {"learning_rate": 3.14159265e-4, "epochs": 6}
    assert "(`training.distill --epochs 6 --learning-rate 0.000314159265`;" in rounds_text(facts)
    assert " from `" not in rounds_text(facts)
    pinned = "a.pt (network sha256 0123456789abcdef)"
    for init, shown in ((pinned, pinned),
                        ("shipped", "shipped (not pinned: the file that name held then)")):
        facts = distill_facts({"distill": {**DISTILLED, "args": {"init": init}}}, "f.pt")
        assert rounds_text(facts).startswith(f"then fine-tuned from `{shown}` toward ")
