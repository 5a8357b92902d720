"""A replay's chain in the recorded run environment (reproduce/runenv.py): the record's run
environment as a lock (exact pins, hashes where recorded, this project never taken from a record),
the plan that says so, --run_env=here|lock, and the chain's command line for the venv's `cm`."""
import dataclasses

import pytest

from mlperf_llm.reproduce import replay, runenv
from mlperf_llm.sysinfo import envlock
from recfix import make_record

SIX = "ab" * 32


def with_run_environment(rec, environment):
    return dataclasses.replace(rec, versions=dict(rec.versions, run_environment=environment))


def opts(tmp_path, **kw):
    return replay.Options(source="x", results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path / "w"), **kw)


RUN = {"six": {"version": "1.17.0", "sha256": SIX}, "numpy": {"version": "2.3.5"},
       "cm4mlperf-llm": {"version": "0.1.0"}, "pip": {"version": "23.2.1", "sha256": ""}}


def test_the_recorded_run_environment_is_written_as_a_lock_and_the_chain_runs_in_its_venv(tmp_path, monkeypatch):
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "cache"))
    p = replay.plan_replay(with_run_environment(make_record(tmp_path), RUN), replay.Host(), opts(tmp_path),
                           exists=lambda p: False)
    assert p.run_lock and p.run_lock.startswith(str(tmp_path / "cache" / "environments" / "run-lock-"))
    text = p.files[p.run_lock]
    # hashed pins first, then exact versions; this project is installed from its files, never from a record
    assert text == f"six==1.17.0 --hash=sha256:{SIX}\nnumpy==2.3.5\npip==23.2.1\n"
    assert envlock.parse(text, bare_pins=True) == [envlock.Locked("six", "1.17.0", SIX),
                                                   envlock.Locked("numpy", "2.3.5", note=envlock.NO_HASH),
                                                   envlock.Locked("pip", "23.2.1", note=envlock.NO_HASH)]
    said = "\n".join(p.fixed)
    assert "the chain's own environment as recorded" in said and "3 packages in a venv of their own, 1 by their " \
        "archive's recorded sha256, 2 by exact version only" in said
    other = replay.plan_replay(with_run_environment(make_record(tmp_path), dict(RUN, six={"version": "1.16.0"})),
                               replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert other.run_lock != p.run_lock                 # another lock, another cache entry


def test_with_docker_chain_the_images_run_venv_is_made_from_the_lock_and_nothing_here(tmp_path, monkeypatch):
    """--docker=chain: the recorded run environment's lock is the image's `run` venv
    (envlock.RUN_LOCK_ENV, which build-mlperf-image reads), not a venv on this machine: the host's
    steps run in this interpreter, and the plan says so; the image's chain is not handed the lock."""
    from mlperf_llm.containers import chain
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "cache"))
    p = replay.plan_replay(with_run_environment(make_record(tmp_path), RUN), replay.Host(),
                           opts(tmp_path, docker="chain"), exists=lambda p: False)
    path = p.request["env"][envlock.RUN_LOCK_ENV]
    assert not p.run_lock and p.files[path] == f"six==1.17.0 --hash=sha256:{SIX}\nnumpy==2.3.5\npip==23.2.1\n"
    assert any("3 packages in the image's run venv, nothing installed here, 1 by their archive's recorded sha256"
               in f for f in p.fixed), p.fixed
    assert envlock.RUN_LOCK_ENV in chain.HOST_ONLY_ENV
    from mlperf_llm.reproduce.compare import REPLAY_ENV
    assert envlock.RUN_LOCK_ENV in REPLAY_ENV           # how the replay repeats the environment, not an override


def test_run_env_here_runs_the_chain_in_this_interpreter_and_says_so(tmp_path):
    p = replay.plan_replay(with_run_environment(make_record(tmp_path), RUN), replay.Host(),
                           opts(tmp_path, run_env="here"), exists=lambda p: False)
    assert not p.run_lock and not any("run-lock-" in f for f in p.files)
    assert any(s.startswith("--run_env=here: the chain runs in this interpreter") for s in p.substitutions)


def test_an_older_record_runs_here_unless_the_lock_is_asked_for(tmp_path):
    rec = make_record(tmp_path)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert not p.run_lock and not p.refusals and not any("run environment" in s for s in p.substitutions)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, run_env="lock"), exists=lambda p: False)
    assert p.refusals and "--run_env=lock: the record holds no run environment" in p.refusals[0] \
        and "--run_env=here" in p.refusals[0]


@pytest.mark.parametrize("bad", [{"six --index-url http://evil/": {"version": "1"}},
                                 {"six": {"version": "1.0; rm -rf /"}},
                                 {"six": {"version": ">=1.0"}},
                                 {"six": {"version": "1.0", "sha256": "not-hex"}}])
def test_a_run_environment_holding_anything_but_pins_and_hashes_is_not_handed_to_pip(tmp_path, bad):
    p = replay.plan_replay(with_run_environment(make_record(tmp_path), bad), replay.Host(), opts(tmp_path),
                           exists=lambda p: False)
    assert not p.run_lock and not any("run-lock-" in f for f in p.files)
    assert any("the record's run environment is not a lock this version can install" in s for s in p.substitutions)


def test_a_lock_line_without_a_hash_is_read_only_where_exact_versions_are_allowed():
    with pytest.raises(envlock.LockError, match=r"line 1: 'six==1\.17\.0' is not 'name==version --hash"):
        envlock.parse("six==1.17.0\n")
    with pytest.raises(envlock.LockError, match=r"line 2: 'six>=1' is not 'name==version', with"):
        envlock.parse("numpy==2.3.5\nsix>=1\n", bare_pins=True)
    assert [d.name for d in envlock.parse("numpy==2.3.5\n", bare_pins=True)] == ["numpy"]


@pytest.mark.parametrize("value, want", [("", ""), ("LOCK", "lock"), (" here ", "here")])
def test_run_env_choices(value, want):
    assert runenv.check_choice(value) == want


def test_an_unknown_run_env_is_refused_naming_the_choices():
    with pytest.raises(runenv.RunEnvError, match="--run_env=venv: choose lock .* or here"):
        runenv.check_choice("venv")


def test_the_request_is_the_same_cm_command_line():
    request = {"tags": "run-mlperf,inference,_full", "quiet": True, "model": "llama2-70b-99",
               "env": {"CM_VLLM_LOCK": "/c/l.txt"}, "adr": {"dataset": {"tags": "_size.8"}}}
    assert runenv.request_argv(request) == [
        "run", "script", "--tags=run-mlperf,inference,_full", "--model=llama2-70b-99", "--env.CM_VLLM_LOCK=/c/l.txt",
        "--adr.dataset.tags=_size.8", "--quiet"]
    assert runenv.cm_of("/e/venv-run/bin/python") == "/e/venv-run/bin/cm"


def test_the_chain_does_not_see_this_interpreters_packages():
    env = runenv.child_env({"PYTHONPATH": "/x", "VIRTUAL_ENV": "/v", "PYTHONHOME": "/h", "CM_REPOS": "/r"})
    assert env == {"CM_REPOS": "/r"}


def test_the_harness_is_told_to_run_in_the_venv_too():
    """A cached LoadGen step names the interpreter it was installed for (this one's): the chain in the
    venv gives the harness its own interpreter instead, and the comparison does not count that setting."""
    from mlperf_llm.harness.cmenv import harness_python
    from mlperf_llm.reproduce.compare import REPLAY_ENV
    from mlperf_llm.sysinfo.pyenv import HARNESS_PYTHON_ENV
    request = runenv.in_venv({"tags": "run-mlperf,inference", "env": {"CM_VLLM_DTYPE": "float32"}}, "/e/bin/python")
    assert request["env"] == {"CM_VLLM_DTYPE": "float32", HARNESS_PYTHON_ENV: "/e/bin/python"}
    assert harness_python({"CM_LOADGEN_PYTHON": "/outer/bin/python", **request["env"]}) == "/e/bin/python"
    assert harness_python({"CM_LOADGEN_PYTHON": "/outer/bin/python"}) == "/outer/bin/python"
    assert HARNESS_PYTHON_ENV in REPLAY_ENV


def test_the_recorded_loadgen_wheel_is_installed_by_its_hash(tmp_path):
    rec = make_record(tmp_path)
    rec = dataclasses.replace(rec, versions=dict(rec.versions, loadgen="6.0.7", loadgen_sha256=SIX))
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert p.request["env"][envlock.LOADGEN_LOCK_ENV] == f"mlcommons-loadgen==6.0.7 --hash=sha256:{SIX}"
    assert f"LoadGen's wheel as recorded: mlcommons-loadgen 6.0.7, installed by its sha256 {SIX[:12]}" in p.fixed
    bad = dataclasses.replace(rec, versions=dict(rec.versions, loadgen="6.0.7 --index-url http://x", loadgen_sha256=SIX))
    p = replay.plan_replay(bad, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert envlock.LOADGEN_LOCK_ENV not in (p.request.get("env") or {})
    assert any("LoadGen wheel (its version and sha256) is not a pin" in s for s in p.substitutions)
    p = replay.plan_replay(make_record(tmp_path), replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert envlock.LOADGEN_LOCK_ENV not in (p.request.get("env") or {})     # an older record: the round's wheel


@pytest.mark.parametrize("line", ["mlcommons-loadgen==6.0.7", "six==1.17.0 --hash=sha256:" + SIX,
                                  f"mlcommons-loadgen==6.0.7 --hash=sha256:{SIX}\nsix==1 --hash=sha256:{SIX}"])
def test_the_loadgen_pin_is_one_hashed_mlcommons_loadgen_line(line):
    with pytest.raises(envlock.LockError):
        envlock.loadgen_pin(line)
