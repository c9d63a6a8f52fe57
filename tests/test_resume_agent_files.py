"""``--resume`` and the files a run's opponents and evaluation agents load (``ckpt:PATH``):
``--set`` replaces an agent whose file is gone (the saved config's agents are made only after
it), and a file replaced since the checkpoint (other weights under the same spec) is refused
unless ``--set`` drops its agent, since the resumed run would not continue the run it was.
Bad ``fingerprints`` pieces: test_hostile_resume.py."""

from __future__ import annotations

import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from sevenrocks_env.fingerprints import files_fingerprint  # noqa: E402
from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.train import main  # noqa: E402

from policy_files import save_policy  # noqa: E402
from test_hostile_resume import SMOKE  # noqa: E402


def folders(tmp_path) -> list:
    return ["--set", f"log_dir={tmp_path / 'runs'}", "--set", f"checkpoint_dir={tmp_path / 'ck'}"]


def base_run(tmp_path, fraction: float):
    """A one-update run against ``ckpt:`` opponent and evaluation agent files of its own:
    ``(its checkpoint, the opponent's file, the evaluation agent's file)``."""
    opponent = save_policy(tmp_path / "opponent.pt", PolicyNet([16]))
    evaluator = save_policy(tmp_path / "evaluator.pt", PolicyNet([16]))
    assert main(["--config", str(SMOKE), *folders(tmp_path), "--set", "total_steps=256",
                 "--set", f"opponents=[ckpt:{opponent}]", "--set", f"opponent_fraction={fraction}",
                 "--set", f"eval_agents=[ckpt:{evaluator}]", "--set", "eval_every=0",
                 "--set", "final_eval_pairs=1"]) == 0
    return tmp_path / "ck" / "smoke" / "step_256.pt", opponent, evaluator


def resume(tmp_path, capsys, checkpoint, *sets) -> tuple[int, str]:
    """Resume ``checkpoint`` (again: ``--force`` goes back over what an earlier try wrote)."""
    capsys.readouterr()
    code = main(["--resume", str(checkpoint), "--force", *folders(tmp_path), "--set",
                 "total_steps=512",
                 "--set", "final_eval_pairs=1", *[part for key in sets for part in ("--set", key)]])
    return code, capsys.readouterr().err


def playing(checkpoint) -> set:
    """The opponents of the checkpoint's matches in progress."""
    return set(torch.load(checkpoint, weights_only=True)["engine"]["opponents"]) - {None}


def test_set_replaces_an_agent_whose_file_is_gone(tmp_path, capsys):
    """The saved config's agents were made before --set: a run could not be resumed once a
    ckpt: file it names was gone, whatever --set said."""
    checkpoint, opponent, evaluator = base_run(tmp_path, fraction=0.0)
    assert playing(checkpoint) == set()  # no match in progress against the opponent
    evaluator.unlink()
    code, err = resume(tmp_path, capsys, checkpoint)  # the final config is checked in full
    assert code == 2 and str(evaluator) in err and "--set eval_agents=[...]" in err, err
    code, err = resume(tmp_path, capsys, checkpoint, f"eval_agents=[ckpt:{evaluator}]")
    assert code == 2 and err.startswith("error: --set: eval_agents:") and str(evaluator) in err
    code, err = resume(tmp_path, capsys, checkpoint, "eval_agents=[random]")
    assert code == 0, err
    opponent.unlink()
    code, err = resume(tmp_path, capsys, checkpoint, "eval_agents=[random]")
    assert code == 2 and str(opponent) in err and "--set opponents=[...]" in err, err
    code, err = resume(tmp_path, capsys, checkpoint, "eval_agents=[random]", "opponents=[greedy]")
    assert code == 0, err


def test_a_match_in_progress_against_a_missing_opponent_names_its_file(tmp_path, capsys):
    checkpoint, opponent, _ = base_run(tmp_path, fraction=0.5)
    assert playing(checkpoint) == {f"ckpt:{opponent}"}
    opponent.unlink()
    for sets in (("opponents=[greedy]",), ()):  # (the same with the config's own opponents)
        code, err = resume(tmp_path, capsys, checkpoint, *sets)
        assert code == 2 and err.startswith("error: the run's matches in progress play "
                                            f"'ckpt:{opponent}' (cannot read checkpoint: no "
                                            f"such file: {opponent})"), err
        assert "--set opponents cannot replace it; put the file back" in err, err
    assert not (tmp_path / "ck" / "smoke" / "step_512.pt").exists()


def test_a_file_replaced_since_the_checkpoint_is_refused(tmp_path, capsys):
    """Checkpoints keep the SHA-256 of each agent's files: the resumed run trained against (or
    was evaluated against) other weights under the same spec without a word."""
    checkpoint, opponent, evaluator = base_run(tmp_path, fraction=0.5)
    saved = torch.load(checkpoint, weights_only=True)["fingerprints"]
    assert saved == {f"ckpt:{spec}": files_fingerprint(f"ckpt:{spec}")
                     for spec in (evaluator, opponent)}
    kept = tmp_path / "kept.pt"
    shutil.copy(evaluator, kept)
    save_policy(evaluator, PolicyNet([16]))  # another policy under the same path
    code, err = resume(tmp_path, capsys, checkpoint)
    assert code == 2 and f"eval_agents 'ckpt:{evaluator}' loads other weights" in err, err
    assert saved[f"ckpt:{evaluator}"][:16] in err and "--set eval_agents=[...] without it" in err
    shutil.copy(kept, evaluator)
    shutil.copy(opponent, kept)
    save_policy(opponent, PolicyNet([16]))
    for sets in ((), ("opponents=[greedy]",)):  # a match in progress plays it: --set cannot help
        code, err = resume(tmp_path, capsys, checkpoint, *sets)
        assert code == 2 and f"opponents 'ckpt:{opponent}' loads other weights" in err, err
        assert "start a new run (a match in progress plays it)" in err, err
    assert not (tmp_path / "ck" / "smoke" / "step_512.pt").exists()
    # a checkpoint written before the fingerprints were kept resumes as it did
    old = torch.load(checkpoint, weights_only=True)
    del old["fingerprints"]
    torch.save(old, checkpoint.parent / "old.pt")
    code, err = resume(tmp_path, capsys, checkpoint.parent / "old.pt")
    assert code == 0, err
    shutil.copy(kept, opponent)  # the file put back: the run resumes
    code, err = resume(tmp_path, capsys, checkpoint)
    assert code == 0, err
    assert torch.load(checkpoint.parent / "latest.pt", weights_only=True)["fingerprints"] == saved


def test_an_opponent_no_match_plays_can_be_dropped_when_its_file_changed(tmp_path, capsys):
    checkpoint, opponent, _ = base_run(tmp_path, fraction=0.0)
    save_policy(opponent, PolicyNet([16]))
    code, err = resume(tmp_path, capsys, checkpoint)
    assert code == 2 and f"opponents 'ckpt:{opponent}' loads other weights" in err, err
    assert "--set opponents=[...] without it" in err, err
    code, err = resume(tmp_path, capsys, checkpoint, "opponents=[greedy]")
    assert code == 0, err


def test_another_spelling_of_a_replaced_file_is_refused_too(tmp_path, capsys, monkeypatch):
    """Fingerprints were looked up by the spec's exact text: `--set opponents=[ckpt:./x.pt]`
    resumed against the replaced ckpt:x.pt without a word."""
    checkpoint, opponent, _ = base_run(tmp_path, fraction=0.0)
    save_policy(opponent, PolicyNet([16]))
    monkeypatch.chdir(tmp_path)
    for spelling in (f"ckpt:./{opponent.name}", f"ckpt:{tmp_path}/./{opponent.name}",
                     f"search:policy={opponent},samples=2"):
        code, err = resume(tmp_path, capsys, checkpoint, f"opponents=[{spelling!r}]")
        assert code == 2 and "loads other weights" in err, (spelling, err)


def test_an_evaluation_agent_replaced_during_a_session_stops_it(tmp_path, monkeypatch):
    """The arena reads an evaluation agent's file at every evaluation, and the checkpoints
    keep the hash taken at the session's start: a file replaced between two evaluations
    measured another agent under the same curve, and blamed the next resume."""
    import training.evaluation as evaluation
    import training.train as train_module
    from sevenrocks_env.driver import AgentError

    evaluator = save_policy(tmp_path / "evaluator.pt", PolicyNet([16]))
    evaluate = evaluation.evaluate_policy
    calls = []

    def evaluate_then_replace(*args, **kwargs):
        calls.append(1)
        results = evaluate(*args, **kwargs)
        save_policy(evaluator, PolicyNet([16]))  # another policy under the same path
        return results

    monkeypatch.setattr(evaluation, "evaluate_policy", evaluate_then_replace)
    with pytest.raises(AgentError, match=f"training stopped at update 2 .*eval_agents "
                                         f"'ckpt:{evaluator}' loads other weights than when "
                                         "this session started"):
        train_module.train(train_module.load_config(SMOKE, [
            f"log_dir={tmp_path / 'runs'}", f"checkpoint_dir={tmp_path / 'ck'}",
            "total_steps=768", "eval_every=1", "eval_pairs=1", f"eval_agents=[ckpt:{evaluator}]"]))
    assert len(calls) == 1


def test_a_ckpt_opponent_whose_path_holds_a_hash_sign_resumes(tmp_path, capsys):
    """`ckpt:h#1/x.pt` was split at `#` as a `past#k` key: "no such file: h"."""
    from training.opponents import is_past_key

    assert is_past_key("past#3") and is_past_key("past@0") and is_past_key("past")
    assert not is_past_key("ckpt:h#1/x.pt") and not is_past_key("ckpt:past#1.pt")
    folder = tmp_path / "h#1"
    folder.mkdir()
    opponent = save_policy(folder / "x.pt", PolicyNet([16]))
    assert main(["--config", str(SMOKE), *folders(tmp_path), "--set", "total_steps=256",
                 "--set", f"opponents=['ckpt:{opponent}']", "--set", "opponent_fraction=0.5",
                 "--set", "eval_every=0", "--set", "final_eval_pairs=1"]) == 0
    checkpoint = tmp_path / "ck" / "smoke" / "step_256.pt"
    assert playing(checkpoint) == {f"ckpt:{opponent}"}
    code, err = resume(tmp_path, capsys, checkpoint)
    assert code == 0, err
