"""What a replay runs, and what it says it cannot have here."""
import dataclasses

import pytest

from mlperf_llm.reproduce import replay
from recfix import REQUEST, SUBMITTER_ROOT, make_record


def opts(tmp_path, **kw):
    return replay.Options(source="x", results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path / "w"), **kw)


def test_the_replay_runs_the_recorded_chain_into_its_own_folders(tmp_path):
    rec = make_record(tmp_path)
    p = replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path), exists=lambda p: False)
    r = p.request
    assert r["tags"] == "run-mlperf,inference,_full,_embedded" and r["quiet"] is True
    assert r["model"] == "llama2-70b-99" and r["division"] == "open" and r["execution_mode"] == "test"
    assert r["results_dir"] == str(tmp_path / "rep" / "results")
    assert r["submission_dir"] == str(tmp_path / "rep" / "submission")
    assert r["adr"] == {"dataset": {"tags": "_size.8"}} and r["env"] == {"CM_VLLM_DTYPE": "float32"}
    assert "inference_src" not in r and "hf_token" not in r
    said = "\n".join(p.substitutions)
    assert f"--inference_src={SUBMITTER_ROOT}/src/inference is a folder of the submitter's machine" in said
    assert "--hf_token: a secret" in said and "--env.MY_API_KEY: a secret" in said
    assert not p.refusals


def test_an_inference_source_given_here_replaces_the_recorded_one(tmp_path):
    rec = make_record(tmp_path)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, inference_src="/here/inf"), exists=lambda p: False)
    assert p.request["inference_src"] == "/here/inf"


def test_a_gpu_result_is_not_replayed_on_the_cpu_unless_asked(tmp_path):
    rec = make_record(tmp_path)
    rec = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], device="cuda")),
                              system=dict(rec.system, device="cuda", gpu="H100", gpu_count="8"))
    p = replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path), exists=lambda p: False)
    assert p.refusals and "--allow_device_change=yes" in p.refusals[0] and "H100 x8" in p.refusals[0]
    p = replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path, allow_device_change=True),
                           exists=lambda p: False)
    assert not p.refusals and p.request["device"] == "cpu"
    assert any("device cuda -> cpu" in s for s in p.substitutions)
    p = replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 8), opts(tmp_path), exists=lambda p: False)
    assert not p.refusals and p.request["device"] == "cuda"


def test_a_results_dir_with_anything_in_it_is_refused(tmp_path):
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "reproduction.json").write_text("{}")
    with pytest.raises(replay.ReplayError, match="earlier reproduction"):
        replay.check_results_dir(str(tmp_path / "rep"))
    replay.check_results_dir(str(tmp_path / "new"))


def test_targets_the_original_run_chose_itself_are_given_to_the_replay(tmp_path):
    rec = make_record(tmp_path)
    rec = dataclasses.replace(rec, targets={
        "Offline": {"target_qps": None, "source": "LoadGen default (mlperf.conf)"},
        "Server": {"target_qps": 1.3, "source": "derived from the Offline performance test of this run "
                                                "(1.89 samples/s); lowered to 1.3 to meet the latency bounds"}})
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert p.request["server_target_qps"] == 1.3 and "offline_target_qps" not in p.request
    assert p.fixed == ["--server_target_qps=1.3: the target the original run chose itself (derived from the "
                       "Offline performance test of this run (1.89 samples/s); lowered to 1.3 to meet the "
                       "latency bounds), given here so both runs measure at the same load"]


def test_a_target_the_command_gave_is_replayed_as_given(tmp_path):
    rec = make_record(tmp_path)
    rec = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], server_target_qps=2)),
                              targets={"Server": {"target_qps": 2, "source": "given"}})
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert p.request["server_target_qps"] == 2 and p.fixed == []


def test_the_same_inference_source_given_here_is_no_substitution(tmp_path):
    rec = make_record(tmp_path)
    given = rec.request["inputs"]["inference_src"]
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, inference_src=given), exists=lambda p: True)
    assert p.request["inference_src"] == given
    assert not any("inference_src" in s for s in p.substitutions)


def test_a_run_on_a_given_server_is_replayed_on_that_address_and_says_so(tmp_path):
    rec = make_record(tmp_path)
    url = "http://127.0.0.1:41234"
    rec = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], api_server=url,
                                                                         vllm_model_name="smollm2")))
    p = replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path), exists=lambda p: False)
    assert p.request["api_server"] == url and p.request["vllm_model_name"] == "smollm2"
    assert any(s.startswith(f"--api_server={url}: the original run was given a running server") and
               "must serve the same model now" in s for s in p.substitutions)


def test_a_performance_test_run_at_the_lowest_load_is_replayed_there_and_its_accuracy_tests_at_the_target(tmp_path):
    """The original's Server performance test ran at the lowest load (its host out of reach of the
    bounds), its accuracy tests at the target: the replay gives both. It gave the lowest load as
    --server_target_qps, and its accuracy tests ran there too (its own table then flagged
    'user.conf .../Server/accuracy: target_qps = 0.35 -> 0.103')."""
    rec = make_record(tmp_path)
    sentence = "this host decodes ~103 ms a token alone: the llama3.1-8b's Server TPOT bound of 100 ms cannot be met"
    rec = dataclasses.replace(rec, targets={"Server": {
        "target_qps": 0.35, "source": "derived from the Offline performance test of this run (0.5 samples/s)",
        "host_limit": {"figure": "TPOT", "alone_ms": 103.0, "bound_ms": 100, "sentence": sentence,
                       "performance_target_qps": 0.103}}})
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert p.request["server_target_qps"] == 0.35
    assert p.request["env"]["CM_MLPERF_PERFORMANCE_LOADS"] == "Server=0.103"
    assert p.fixed[0].startswith("--server_target_qps=0.35: the target the original run chose itself (derived")
    assert p.fixed[1].startswith("--env.CM_MLPERF_PERFORMANCE_LOADS=Server=0.103: the load the original run's Server "
                                 "performance test ran at (the lowest load: this host decodes ~103 ms")
    # a record that keeps the load on its own (a replay's, given it) is replayed at it alike
    rec = dataclasses.replace(rec, targets={"Server": {"target_qps": 0.35, "source": "given",
                                                       "performance_target_qps": 0.2}})
    assert replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False
                              ).request["env"]["CM_MLPERF_PERFORMANCE_LOADS"] == "Server=0.2"


SIX = "ab" * 32


def with_environment(rec, environment):
    return dataclasses.replace(rec, versions=dict(rec.versions, server_environment=environment))


def test_the_recorded_server_environment_is_installed_as_a_lock_not_resolved_again(tmp_path, monkeypatch):
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "cache"))
    rec = with_environment(make_record(tmp_path), {"six": {"version": "1.17.0", "sha256": SIX},
                                                   "pip": {"version": "23.2.1", "sha256": ""}})
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    (path, text), = p.files.items()
    assert p.request["env"][replay.LOCK_ENV] == path and path.startswith(str(tmp_path / "cache" / "environments"))
    assert text == f"six==1.17.0 --hash=sha256:{SIX}\n"                  # pip of the venv itself: the new venv's own
    assert any("the server's environment as recorded: 1 packages" in f for f in p.fixed)
    other = with_environment(rec, {"six": {"version": "1.16.0", "sha256": SIX}})
    assert replay.plan_replay(other, replay.Host(), opts(tmp_path), exists=lambda p: False).files.keys() != p.files.keys()


def test_a_server_of_ones_own_or_an_older_record_installs_no_lock(tmp_path):
    rec = with_environment(make_record(tmp_path), {"six": {"version": "1.17.0", "sha256": SIX}})
    rec = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"],
                                                                            api_server="http://127.0.0.1:8000")))
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert not p.files and replay.LOCK_ENV not in (p.request.get("env") or {})
    p = replay.plan_replay(make_record(tmp_path), replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert not p.files and not any("as recorded" in f for f in p.fixed)


@pytest.mark.parametrize("bad", [{"six --index-url http://evil/": {"version": "1", "sha256": SIX}},
                                 {"six": {"version": "1.0; rm -rf /", "sha256": SIX}},
                                 {"six": {"version": "1.0", "sha256": "not-hex"}}])
def test_a_recorded_environment_holding_anything_but_pins_and_hashes_is_not_handed_to_pip(tmp_path, bad):
    p = replay.plan_replay(with_environment(make_record(tmp_path), bad), replay.Host(), opts(tmp_path),
                           exists=lambda p: False)
    assert not p.files and replay.LOCK_ENV not in (p.request.get("env") or {})
    assert any("not a lock this version can install" in s for s in p.substitutions)


def test_docker_as_recorded_or_as_asked_and_the_records_engine_never_run(tmp_path):
    """A --docker run is replayed with its server in an image built here; --docker=yes|no on the replay
    chooses and says so; the record's --container_engine (a program of its machine) is not run."""
    rec = make_record(tmp_path)
    docker_run = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(
        rec.request["inputs"], docker=True, container_engine=str(tmp_path / "their-machine" / "podman"))))
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert p.request["docker"] is True and "container_engine" not in p.request and not p.refusals
    engine = tmp_path / "their-machine" / "podman"
    assert any(f"--container_engine={engine}: the original run's engine" in s for s in p.substitutions)
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, docker="no"), exists=lambda p: False)
    assert "docker" not in p.request
    assert any(s.startswith("--docker=no (the original run: yes): vLLM served from the recorded vLLM venv")
               for s in p.substitutions)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, docker="yes"), exists=lambda p: False)
    assert p.request["docker"] == "yes"
    assert any("--docker=yes (the original run: no): vLLM served from an image of the recorded vLLM venv" in s
               for s in p.substitutions)
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, docker="yes"), exists=lambda p: False)
    assert p.request["docker"] == "yes" and not any(s.startswith("--docker") for s in p.substitutions)


def test_any_record_is_replayed_with_the_whole_chain_in_an_image_built_from_its_locks(tmp_path):
    """--docker=chain on the replay of a run on the host or of a --docker run: the whole chain in an
    image built here from the recorded environments, said; a --docker run's facts (its server's image)
    are not that image, so they are not rebuilt, and its archive is refused, naming both kinds; a
    --docker=chain run replayed as recorded rebuilds the recorded image; a recorded --docker that is
    none of yes, no or chain is refused, naming it."""
    from mlperf_llm.containers.image import LOAD_ENV, REBUILD_ENV
    rec = make_record(tmp_path)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, docker="chain"), exists=lambda p: False)
    assert p.request["docker"] == "chain" and not p.refusals
    assert any(s.startswith("--docker=chain (the original run: no): the whole chain in an image of the recorded "
                            "environments") for s in p.substitutions)
    locked = with_environment(rec, {"six": {"version": "1.17.0", "sha256": SIX}})
    p = replay.plan_replay(locked, replay.Host(), opts(tmp_path, docker="chain"), exists=lambda p: False)
    assert p.files and not p.refusals        # the record's vLLM lock: the image's venv is built from it
    assert any(f.startswith("the server's environment as recorded") and "the image's vLLM venv built from it" in f
                   for f in p.fixed), p.fixed
    image = {"tag": "localhost/cm4mlperf-llm:abc", "id": "sha256:" + "1" * 64}
    docker_run = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], docker=True)),
                                     server=dict(rec.server, image=image))
    facts = str(tmp_path / "sub" / "cm4mlperf-image.json")
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, docker="chain"), exists=lambda p: False,
                           image_facts=facts)
    assert p.request["docker"] == "chain" and REBUILD_ENV not in (p.request.get("env") or {}) and not p.refusals
    assert any(s.startswith("--docker=chain (the original run: yes)") for s in p.substitutions)
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, docker="chain", image_archive="image.tar"),
                           exists=lambda p: False, image_facts=facts)
    assert any("the recorded run's image (--docker=yes) is not the kind this replay runs in (--docker=chain)" in r
               for r in p.refusals)
    chain_run = dataclasses.replace(docker_run, request=dict(docker_run.request, inputs=dict(
        rec.request["inputs"], docker="chain")))
    for asked in ("", "chain"):
        p = replay.plan_replay(chain_run, replay.Host(), opts(tmp_path, docker=asked), exists=lambda p: False,
                               image_facts=facts)
        assert p.request["docker"] == "chain" and p.request["env"][REBUILD_ENV] == facts and not p.refusals
        assert LOAD_ENV not in p.request["env"] and not any(s.startswith("--docker") for s in p.substitutions)
        assert any(f.startswith("the image the whole chain ran in rebuilt from its recorded recipe") for f in p.fixed)
    p = replay.plan_replay(chain_run, replay.Host(), opts(tmp_path, docker="yes"), exists=lambda p: False,
                           image_facts=facts)
    assert p.request["docker"] == "yes" and REBUILD_ENV not in (p.request.get("env") or {})
    odd = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], docker="sometimes")))
    p = replay.plan_replay(odd, replay.Host(), opts(tmp_path), exists=lambda p: False)
    assert "docker" not in p.request and any("the record's request: --docker" in r and "'sometimes'" in r
                                             for r in p.refusals), p.refusals


def test_a_docker_replay_of_a_docker_run_rebuilds_the_recorded_image_or_loads_its_archive_checked_by_id(tmp_path):
    """The facts file beside a --docker run's record (its image's recipe and ID): the replay's image is
    rebuilt from it and must have the recorded ID; a published archive of it is loaded instead and
    checked by that ID. Without the facts (a run on the host) the image is built from the lock."""
    from mlperf_llm.containers.image import LOAD_ENV, REBUILD_ENV
    rec = make_record(tmp_path)
    docker_run = dataclasses.replace(rec, request=dict(rec.request, inputs=dict(rec.request["inputs"], docker=True)),
                                     server=dict(rec.server, image={"tag": "localhost/cm4mlperf-llm:abc",
                                                                    "id": "sha256:" + "1" * 64}))
    facts = str(tmp_path / "sub" / "cm4mlperf-image.json")
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path), exists=lambda p: False, image_facts=facts)
    assert p.request["env"][REBUILD_ENV] == facts and LOAD_ENV not in p.request["env"] and not p.refusals
    assert any("rebuilt from its recorded recipe (cm4mlperf-image.json" in f and "sha256:111111111111" in f
               for f in p.fixed)
    archive = tmp_path / "image.tar"
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, image_archive=str(archive)),
                           exists=lambda p: False, image_facts=facts)
    assert p.request["env"][LOAD_ENV] == str(archive) and p.request["env"][REBUILD_ENV] == facts
    assert any("image.tar loaded and checked against the recorded ID sha256:111111111111" in f for f in p.fixed)
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, docker="no"), exists=lambda p: False,
                           image_facts=facts)
    assert REBUILD_ENV not in (p.request.get("env") or {})                     # served on the host
    p = replay.plan_replay(docker_run, replay.Host(), opts(tmp_path, docker="no", image_archive=str(archive)),
                           exists=lambda p: False, image_facts=facts)
    assert any("only a replay with --docker=yes" in r for r in p.refusals)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, docker="yes", image_archive=str(archive)),
                           exists=lambda p: False)
    assert any("holds no facts file of the recorded image" in r for r in p.refusals)
    p = replay.plan_replay(rec, replay.Host(), opts(tmp_path, docker="yes"), exists=lambda p: False)
    assert REBUILD_ENV not in (p.request.get("env") or {}) and not p.refusals   # built from the recorded lock


def test_the_servers_key_of_the_original_run_is_named_as_such_and_vllms_variable_recorded_present(tmp_path,
                                                                                                monkeypatch):
    """A key is never in a record: the replay says its own servers require none unless VLLM_API_KEY is
    exported here (then they require it and the benchmark sends it), not that a download may need it."""
    request = dict(REQUEST, inputs={**REQUEST["inputs"], "api_key": "k-1"})
    rec = make_record(tmp_path, request=request, environ={"VLLM_API_KEY": "k-2"})
    assert rec.secrets["api_key"] == rec.secrets["VLLM_API_KEY"] == "present" and "k-1" not in rec.to_json()
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    said = "\n".join(replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path),
                                        exists=lambda p: False).substitutions)
    assert "--api_key: the original run's servers required an API key, which no record holds; the servers this " \
           "replay starts require none unless you export VLLM_API_KEY" in said
    assert said.count("servers required an API key") == 1        # said once, for the input and the variable
    assert "api_key: a secret" not in said and "k-1" not in said and "k-2" not in said
    monkeypatch.setenv("VLLM_API_KEY", "k-3")
    said = "\n".join(replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path),
                                        exists=lambda p: False).substitutions)
    assert "--api_key: the original run's servers required an API key, which no record holds; the servers this " \
           "replay starts require the VLLM_API_KEY exported here" in said
    # a key only in the original run's environment is said under its name
    rec = make_record(tmp_path, environ={"VLLM_API_KEY": "k-2"})
    monkeypatch.delenv("VLLM_API_KEY")
    said = replay.plan_replay(rec, replay.Host("x86_64", "EPYC", 0), opts(tmp_path), exists=lambda p: False).substitutions
    assert [s for s in said if s.startswith("VLLM_API_KEY: the original run's servers required an API key")]
