"""The model's environment (issue 40): the lock of the `ml` venv a model step ran in, written beside
the model (models/environment.py), carried by the record (versions.model_environment), given by a
replay to the model steps' venv alone (--adr.ml-venv.env, install-python-venv --lock), compared
package by package, and --model_env=here|lock."""
import dataclasses
import os
import sys

import pytest

from mlperf_llm.models import environment
from mlperf_llm.reproduce import compare, replay, runenv
from mlperf_llm.sysinfo import envlock, pyenv
from recfix import make_record

TORCH = "cd" * 32
GGUF = "ef" * 32


def lock_file(tmp_path, text=f"torch==2.13.0+cpu --hash=sha256:{TORCH}\ngguf==0.19.0 --hash=sha256:{GGUF}\n"
                              "# pip==23.2.1  (not installed by this project (the venv's own, or by hand): version only)\n"):
    path = tmp_path / envlock.MODEL_LOCK_FILE
    path.write_text(text)
    return str(path)


def opts(tmp_path, **kw):
    return replay.Options(source="x", results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path / "w"), **kw)


def test_the_record_carries_the_model_steps_environment_as_pinned_by_hash(tmp_path):
    rec = make_record(tmp_path, env={envlock.MODEL_LOCK_ENV: lock_file(tmp_path)})
    model_env = rec.versions["model_environment"]
    assert model_env == {"gguf": {"version": "0.19.0", "sha256": GGUF},
                         "torch": {"version": "2.13.0+cpu", "sha256": TORCH}}     # the venv's own pip: not pinned
    assert len(rec.versions["model_environment_sha256"]) == 64
    assert "model_environment" not in make_record(tmp_path).versions       # an older model step: none
    garbled = lock_file(tmp_path, "torch>=2 --index-url http://evil/\n")
    assert "model_environment" not in make_record(tmp_path, env={envlock.MODEL_LOCK_ENV: garbled}).versions


def test_a_model_step_writes_the_lock_of_its_venv_beside_the_model(tmp_path, monkeypatch):
    venv = tmp_path / "venv-ml"
    (venv / "bin").mkdir(parents=True)
    (venv / pyenv.DONE_MARK).write_text(sys.executable + "\n")
    monkeypatch.setattr(envlock, "read", lambda python: [envlock.Locked("torch", "2.13.0+cpu", TORCH),
                                                         envlock.Locked("pip", "23.2.1", note=envlock.NO_HASH)])
    out = environment.write_lock({"CM_VENV_PYTHON": str(venv / "bin" / "python")}, str(tmp_path))
    path = out[envlock.MODEL_LOCK_ENV]
    assert os.path.dirname(path) == str(tmp_path)
    assert envlock.parse_file(path) == [envlock.Locked("torch", "2.13.0+cpu", TORCH)]
    assert environment.write_lock({}, str(tmp_path)) == {}


def test_a_venv_that_cannot_list_itself_leaves_the_model_made_and_says_the_record_will_not_name_it(tmp_path,
                                                                                                   monkeypatch, capsys):
    def fails(python):
        raise envlock.LockError(f"{python} could not list its distributions")
    monkeypatch.setattr(envlock, "read", fails)
    assert environment.write_lock({"CM_VENV_PYTHON": "/nowhere/bin/python"}, str(tmp_path)) == {}
    assert "the record will not name it" in capsys.readouterr().err
    assert not (tmp_path / envlock.MODEL_LOCK_FILE).exists()


def test_a_replay_gives_the_recorded_lock_to_the_model_steps_venv_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "cache"))
    rec = make_record(tmp_path, env={envlock.MODEL_LOCK_ENV: lock_file(tmp_path)})
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    path = p.request["adr"][envlock.ML_VENV_DEP]["env"][envlock.VENV_LOCK_ENV]
    assert os.path.basename(path).startswith("ml-lock-") and path in p.files
    assert envlock.parse(p.files[path]) == [envlock.Locked("gguf", "0.19.0", GGUF),
                                            envlock.Locked("torch", "2.13.0+cpu", TORCH)]
    assert envlock.VENV_LOCK_ENV not in (p.request.get("env") or {})   # not every venv's: the ml venv's alone
    assert any("the model's environment as recorded: 2 packages" in f for f in p.fixed), p.fixed
    # the command line a venv's cm is given says the same
    assert f"--adr.{envlock.ML_VENV_DEP}.env.{envlock.VENV_LOCK_ENV}={path}" in runenv.request_argv(p.request)
    here = replay.plan_replay(rec, replay.Host(), opts(tmp_path, model_env="here"), exists=lambda p: False)
    assert envlock.ML_VENV_DEP not in (here.request.get("adr") or {})
    assert any(s.startswith("--model_env=here: the model steps' venv as this machine makes it")
               for s in here.substitutions)


def test_an_older_record_makes_the_model_venv_here_unless_the_lock_is_asked_for(tmp_path):
    rec = make_record(tmp_path)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert envlock.ML_VENV_DEP not in (p.request.get("adr") or {}) and not p.refusals
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, model_env="lock"), exists=lambda p: False)
    assert any("--model_env=lock: the record holds no model environment" in r and "--model_env=here" in r
               for r in p.refusals), p.refusals


@pytest.mark.parametrize("bad", [{"torch --index-url http://evil/": {"version": "1", "sha256": TORCH}},
                                 {"torch": {"version": ">=2", "sha256": TORCH}},
                                 {"torch": {"version": "2.13.0", "sha256": "not-hex"}}])
def test_a_model_environment_holding_anything_but_pins_and_hashes_is_not_handed_to_pip(tmp_path, bad):
    rec = make_record(tmp_path)
    rec = dataclasses.replace(rec, versions=dict(rec.versions, model_environment=bad))
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert envlock.ML_VENV_DEP not in (p.request.get("adr") or {}) and not any("ml-lock-" in f for f in p.files)
    assert any("the record's model environment is not a lock this version can install" in s for s in p.substitutions)


def test_the_comparison_names_each_model_package_that_differs_and_not_as_changing_accuracy(tmp_path):
    a = make_record(tmp_path, env={envlock.MODEL_LOCK_ENV: lock_file(tmp_path)})
    other = tmp_path / "other"
    other.mkdir()
    b = make_record(tmp_path, env={envlock.MODEL_LOCK_ENV: lock_file(
        other, f"torch==2.13.0+cpu --hash=sha256:{TORCH}\ngguf==0.20.0 --hash=sha256:{'12' * 32}\n")})
    diffs = {d.name: d for d in compare.differing_inputs(a, b)}
    assert "model-step package gguf" in diffs and not diffs["model-step package gguf"].affects_accuracy
    assert "0.19.0" in diffs["model-step package gguf"].recorded and "0.20.0" in diffs["model-step package gguf"].reproduced
    assert "model-step package torch" not in diffs
    assert not diffs["the model steps' environment (every package's version and archive)"].affects_accuracy
    assert not [d for d in compare.differing_inputs(a, a) if "model" in d.name]


@pytest.mark.parametrize("value", ["venv", "yes"])
def test_model_env_choices_name_the_flag(value):
    assert runenv.check_choice(" LOCK ", "model_env") == "lock"
    with pytest.raises(runenv.RunEnvError, match=rf"--model_env={value}: choose lock \(the model steps' venv"):
        runenv.check_choice(value, "model_env")


def test_a_replays_own_record_is_replayed_without_the_settings_of_the_machine_it_ran_on(tmp_path, monkeypatch):
    """A reproduction's record (its results folder, replayed in turn): the locks and interpreter the
    first replay set (paths of its machine) are left out, said, and made again from the record's
    environments; they refuse nothing and are not compared as overrides."""
    from mlperf_llm.vllm.install import LOCK_ENV
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "cache"))
    rec = make_record(tmp_path, env={envlock.MODEL_LOCK_ENV: lock_file(tmp_path)})
    request = dict(rec.request, env={**(rec.request.get("env") or {}), LOCK_ENV: "/x/vllm-lock-1.txt",
                                     "CM_MLPERF_HARNESS_PYTHON": "/x/venv-run/bin/python"},
                   adr={envlock.ML_VENV_DEP: {"env": {envlock.VENV_LOCK_ENV: "/x/ml-lock-1.txt"}}})
    replayed = dataclasses.replace(rec, request=request)
    p = replay.plan_replay(replayed, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert not p.refusals, p.refusals
    said = [s for s in p.substitutions if s.startswith("the recorded run was itself a replay")]
    assert said and f"--env.{LOCK_ENV}" in said[0] and f"--adr.{envlock.ML_VENV_DEP}.env.{envlock.VENV_LOCK_ENV}" in said[0]
    assert "/x/" not in str(p.request)
    assert p.request["adr"][envlock.ML_VENV_DEP]["env"][envlock.VENV_LOCK_ENV].startswith(str(tmp_path / "cache"))
    assert not [d for d in compare.differing_inputs(replayed, rec) if d.name.startswith("--env")]
    # anything else a record's adr asks of that venv is still the record's choice: refused unless trusted
    other = dataclasses.replace(rec, request=dict(rec.request, adr={envlock.ML_VENV_DEP: {"tags": "_name.evil"}}))
    assert replay.plan_replay(other, replay.Host(), opts(tmp_path), exists=lambda p: False).refusals
