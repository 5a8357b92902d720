"""The SquashFS launcher (containers/squash_launcher.py, IMAGE.sqfs.run): which of the host's NVIDIA
driver files it brings into the image, how it stages them, and ch-run's command line. Its run in a
real image as a non-root uid is tested in tests/integration/containers (a stand-in driver) and on
the lent GPU node (tests/gpu: the real one)."""
import os
import shlex
from pathlib import Path

import pytest

from mlperf_llm.containers import squash, squash_launcher as sl

LDCONFIG = Path(__file__).resolve().parents[2] / "fixtures" / "sysinfo" / "ldconfig"
UNSET = [f"--unset-env={v}" for v in sl.HOST_PATHS]


def test_the_distribution_drivers_64_bit_sonames_are_taken_and_nothing_else():
    libs = sl.driver_libraries((LDCONFIG / "nvidia_distro.txt").read_text())
    assert libs == {
        "libnvidia-ptxjitcompiler.so.1": "/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1",
        "libnvidia-nvvm.so.4": "/lib/x86_64-linux-gnu/libnvidia-nvvm.so.4",
        "libnvidia-ml.so.1": "/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "libnvidia-gpucomp.so.580.159.04": "/lib/x86_64-linux-gnu/libnvidia-gpucomp.so.580.159.04",
        "libnvidia-cfg.so.1": "/lib/x86_64-linux-gnu/libnvidia-cfg.so.1",
        "libnvidia-allocator.so.1": "/lib/x86_64-linux-gnu/libnvidia-allocator.so.1",
        "libcudadebugger.so.1": "/lib/x86_64-linux-gnu/libcudadebugger.so.1",
        "libcuda.so.1": "/lib/x86_64-linux-gnu/libcuda.so.1",
    }                   # no i386 entry, no unversioned development link, no EGL, no libc


def test_a_host_without_the_driver_gives_nothing_and_nvidia_is_refused_with_the_fix(tmp_path):
    assert sl.driver_libraries((LDCONFIG / "no_driver.txt").read_text(), (str(tmp_path / "absent"),)) == {}
    with pytest.raises(sl.LaunchError, match=r"libcuda\.so\.1.*--gpus=none"):
        sl.stage_nvidia(str(tmp_path), {}, {})


def driver_folder(root: Path, version: str = "580.159.04") -> Path:
    """A container host's driver folder (as /usr/local/nvidia/lib64): real files named by the driver's
    version, the sonames linking to them."""
    root.mkdir(parents=True, exist_ok=True)
    for stem, soname in (("libcuda", "libcuda.so.1"), ("libnvidia-ml", "libnvidia-ml.so.1")):
        (root / f"{stem}.so.{version}").write_bytes(stem.encode() * 100)
        (root / soname).symlink_to(f"{stem}.so.{version}")
    (root / f"libnvidia-gpucomp.so.{version}").write_bytes(b"gpucomp")
    (root / "libc.so.6").write_bytes(b"not the driver's")
    return root


def test_a_folder_on_ld_library_path_gives_each_file_once_by_its_soname(tmp_path):
    d = driver_folder(tmp_path / "lib64")
    libs = sl.driver_libraries("", (str(d),))
    assert sorted(libs) == ["libcuda.so.1", "libnvidia-gpucomp.so.580.159.04", "libnvidia-ml.so.1"]
    assert sl.driver_version(libs) == "580.159.04"
    assert sl.driver_version({}) == "unknown"


def test_staging_copies_once_per_driver_and_again_only_what_changed(tmp_path):
    d = driver_folder(tmp_path / "lib64")
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho smi\n")
    smi.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    libs = sl.driver_libraries("", (str(d),))
    folder, copied, kept, gone = sl.stage_nvidia(str(work), libs, {"nvidia-smi": str(smi)})
    assert folder == str(work / ".host-gpu" / "nvidia-580.159.04") and (copied, kept, gone) == (4, 0, ())
    lib = Path(folder) / "lib"
    assert (lib / "libcuda.so.1").read_bytes() == b"libcuda" * 100 and not (lib / "libcuda.so.1").is_symlink()
    assert os.readlink(lib / "libcuda.so") == "libcuda.so.1"                 # the unversioned name too
    assert os.access(Path(folder) / "bin" / "nvidia-smi", os.X_OK)
    assert sl.stage_nvidia(str(work), libs, {"nvidia-smi": str(smi)})[1:3] == (0, 4)
    (d / "libcuda.so.580.159.04").write_bytes(b"a newer build")
    assert sl.stage_nvidia(str(work), libs, {"nvidia-smi": str(smi)})[1:3] == (1, 3)
    assert (lib / "libcuda.so.1").read_bytes() == b"a newer build"
    assert not [p for p in Path(folder).rglob("*.part-*")]                    # written whole


def test_auto_finds_the_vendor_by_its_device_or_tool():
    assert sl.gpu_kind("auto", exists=lambda p: p == "/dev/nvidiactl", which=lambda t: None) == "nvidia"
    assert sl.gpu_kind("auto", exists=lambda p: False, which=lambda t: "/usr/bin/nvidia-smi") == "nvidia"
    assert sl.gpu_kind("auto", exists=lambda p: p == "/dev/kfd", which=lambda t: None) == "amd"
    assert sl.gpu_kind("auto", exists=lambda p: False, which=lambda t: None) == "none"
    assert sl.gpu_kind("none", exists=lambda p: True, which=lambda t: "x") == "none"


def test_the_image_gets_the_staged_driver_first_on_its_paths(tmp_path):
    d = driver_folder(tmp_path / "lib64")
    work = tmp_path / "work"
    work.mkdir()
    argv, note = sl.plan("/img/image.sqfs", str(work), ["nvidia-smi"], "nvidia",
                         environ={"LD_LIBRARY_PATH": f"/nowhere:{d}"}, ldconfig=lambda: "", which=lambda t: None)
    inside = "/mnt/.host-gpu/nvidia-580.159.04"
    assert argv == ["ch-run", *UNSET, "--set-env=/img/image.sqfs.env", "--set-env=HOME=/mnt",
                    f"--set-env=LD_LIBRARY_PATH={inside}/lib", f"--set-env=PATH={inside}/bin:$PATH",
                    f"--set-env=TRITON_LIBCUDA_PATH={inside}/lib", "--cd=/mnt", f"--bind={work}:/mnt",
                    "/img/image.sqfs", "--", "nvidia-smi"]
    assert "NVIDIA driver 580.159.04" in note and "3 libraries" in note and "(3 copied, 0 already there)" in note


def test_a_dry_run_copies_nothing(tmp_path):
    d = driver_folder(tmp_path / "lib64")
    work = tmp_path / "work"
    work.mkdir()
    _, note = sl.plan("/i.sqfs", str(work), ["true"], "nvidia", environ={"LD_LIBRARY_PATH": str(d)},
                      ldconfig=lambda: "", which=lambda t: None, stage=False)
    assert "nothing copied" in note and not (work / ".host-gpu").exists()


def test_without_gpus_the_hosts_folders_stay_out_of_the_image_and_home_is_the_work_folder():
    argv, note = sl.plan("/i.sqfs", "/w", ["true"], "none", binds=(("/data", "/srv"),))
    assert argv == ["ch-run", *UNSET, "--set-env=/i.sqfs.env", "--set-env=HOME=/mnt", "--cd=/mnt",
                    "--bind=/w:/mnt", "--bind=/data:/srv", "/i.sqfs", "--", "true"]
    assert {"LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CM_REPOS"} <= set(sl.HOST_PATHS)
    assert note == "GPUs: none"
    assert squash.run_argv("/i.sqfs", ["true"], (("/w", "/mnt"),), "/mnt") == sl.ch_run_argv(
        "/i.sqfs", ["true"], (("/w", "/mnt"),), "/mnt")                      # one command line


def test_amd_needs_the_rocm_device_and_copies_nothing():
    with pytest.raises(sl.LaunchError, match="/dev/kfd.*--gpus=none"):
        sl.plan("/i.sqfs", "/w", ["true"], "amd", exists=lambda p: False)
    argv, note = sl.plan("/i.sqfs", "/w", ["true"], "amd", exists=lambda p: p == "/dev/kfd")
    assert argv[:len(UNSET) + 1] == ["ch-run", *UNSET] and "ROCm's user space is the image's" in note


@pytest.fixture
def image(tmp_path):
    img = tmp_path / "image.sqfs"
    img.write_bytes(b"hsqs")
    (tmp_path / "image.sqfs.env").write_text(squash.environment(1700000000))
    return img


def test_the_command_line_errors_name_the_input_and_the_fix(image, tmp_path, capsys):
    assert sl.main(["--", "true"], str(tmp_path / "missing.sqfs")) == 2
    assert "missing.sqfs" in capsys.readouterr().err
    assert sl.main(["--gpus=none", "--dry-run", "--bind=/data", "--", "true"], str(image)) == 2
    assert "--bind=/data: HOST:TARGET" in capsys.readouterr().err
    assert sl.main(["--gpus=none", "--dry-run", f"--work={tmp_path}/nope", "--", "true"], str(image)) == 2
    assert "not a folder" in capsys.readouterr().err


def test_no_ch_run_is_told_where_to_get_it(image, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert sl.main(["--gpus=none", "--", "true"], str(image)) == 2
    assert "ch-run is not on PATH" in capsys.readouterr().err


def test_a_dry_run_prints_the_command_it_would_run(image, tmp_path, capsys):
    assert sl.main(["--gpus=none", "--dry-run", f"--work={tmp_path}", "--", "cm", "run", "script"], str(image)) == 0
    out, err = capsys.readouterr()
    assert shlex.split(out) == sl.ch_run_argv(str(image), ["cm", "run", "script"], ((str(tmp_path), "/mnt"),),
                                              env=("HOME=/mnt",))
    assert err.strip() == "GPUs: none"


def test_the_environment_and_the_launcher_are_written_beside_the_image(tmp_path):
    img = tmp_path / "image.sqfs"
    squash.write_beside(str(img), 1700000000)
    assert (tmp_path / "image.sqfs.env").read_text() == squash.environment(1700000000)
    run = tmp_path / "image.sqfs.run"
    assert run.read_bytes() == Path(sl.__file__).read_bytes() and os.access(run, os.X_OK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["image.sqfs.env", "image.sqfs.run"]


def test_a_node_whose_fuse_is_closed_is_told_to_unpack_the_file(image, tmp_path):
    closed = sl.fuse_refusal(str(image), str(image), access=lambda p, m: False)
    assert "/dev/fuse is not open to uid" in closed and f"unsquashfs -d DIR {image}" in closed
    assert f"{image}.run --image=DIR" in closed
    assert sl.fuse_refusal(str(image), str(image), access=lambda p, m: True) == ""
    assert sl.fuse_refusal(str(tmp_path), str(image), access=lambda p, m: False) == ""     # a folder: no FUSE


def test_a_folder_unpacked_from_the_file_runs_with_the_files_environment(image, tmp_path, capsys):
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    assert sl.main(["--gpus=none", "--dry-run", f"--image={unpacked}", f"--work={tmp_path}", "--", "true"],
                   str(image)) == 0
    argv = shlex.split(capsys.readouterr().out)
    assert argv[len(UNSET) + 1] == f"--set-env={image}.env" and argv[-3:] == [str(unpacked), "--", "true"]


def test_the_lent_h200_nodes_driver_is_what_its_ldconfig_lists_under_nvidias_folder():
    """Recorded on the lent GPU node (benchmarks/gpu_check.sh, 2026-11-30): the driver in
    /usr/local/nvidia/lib64 and again in /lib; the CUDA toolkit's libraries are not the driver's."""
    libs = sl.driver_libraries((LDCONFIG / "h200_node.txt").read_text())
    assert sorted(libs) == ["libcuda.so.1", "libcudadebugger.so.1", "libnvidia-allocator.so.1", "libnvidia-cfg.so.1",
                            "libnvidia-gpucomp.so.580.159.04", "libnvidia-ml.so.1", "libnvidia-nvvm.so.4",
                            "libnvidia-opencl.so.1", "libnvidia-pkcs11-openssl3.so.580.159.04",
                            "libnvidia-ptxjitcompiler.so.1"]
    assert {os.path.dirname(p) for p in libs.values()} == {"/usr/local/nvidia/lib64"}


def test_two_launches_staging_at_once_do_not_trip_on_each_others_links(tmp_path, monkeypatch):
    d = driver_folder(tmp_path / "lib64")
    work = tmp_path / "work"
    work.mkdir()
    libs = sl.driver_libraries("", (str(d),))
    sl.stage_nvidia(str(work), libs, {})
    monkeypatch.setattr(sl.os.path, "lexists", lambda p: False)       # as if the other made it just after
    assert sl.stage_nvidia(str(work), libs, {})[1:3] == (0, 3)


def test_a_driver_file_gone_since_ldconfig_listed_it_is_left_out_and_named(tmp_path):
    d = driver_folder(tmp_path / "lib64")
    (d / "libnvidia-nvvm.so.4").symlink_to("libnvidia-nvvm.so.580.159.04")      # dangling
    work = tmp_path / "work"
    work.mkdir()
    _, note = sl.plan("/i.sqfs", str(work), ["true"], "nvidia", environ={"LD_LIBRARY_PATH": str(d)},
                      ldconfig=lambda: "", which=lambda t: None)
    assert "3 libraries" in note and f"left out, their files gone: {d}/libnvidia-nvvm.so.4" in note
    assert not (work / ".host-gpu" / "nvidia-580.159.04" / "lib" / "libnvidia-nvvm.so.4").exists()


def test_a_work_folder_the_user_cannot_write_is_refused_before_anything_is_copied(tmp_path, monkeypatch):
    d = driver_folder(tmp_path / "lib64")
    monkeypatch.setattr(sl.os, "access", lambda p, m: False)
    with pytest.raises(sl.LaunchError, match="cannot write there.*--gpus=none"):
        sl.plan("/i.sqfs", str(tmp_path), ["true"], "nvidia", environ={"LD_LIBRARY_PATH": str(d)},
                ldconfig=lambda: "", which=lambda t: None)
    assert not (tmp_path / ".host-gpu").exists()


def test_the_command_must_follow_two_dashes_and_options_are_not_abbreviated(image, tmp_path, capsys):
    with pytest.raises(SystemExit):
        sl.main(["--gpus=none", "true"], str(image))
    assert "put -- before the command" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sl.main(["--dry", "--", "true"], str(image))
    assert sl.main(["--gpus=none", "--dry-run", f"--work={tmp_path}", "--", "sh", "-c", "x", "--", "--gpus=amd"],
                   str(image)) == 0
    out = shlex.split(capsys.readouterr().out)
    assert out[-7:] == [str(image), "--", "sh", "-c", "x", "--", "--gpus=amd"]      # the command's own, as given


@pytest.mark.parametrize("image_folder, work_folder, said", [("a=b", ".", "would read a path with '='"),
                                                             (".", "w:1", "cannot bind a path with ':'")])
def test_paths_ch_run_would_misread_are_refused(image_folder, work_folder, said, tmp_path, capsys):
    for folder in (tmp_path / image_folder, tmp_path / work_folder):
        folder.mkdir(exist_ok=True)
    img = tmp_path / image_folder / "image.sqfs"
    img.write_bytes(b"hsqs")
    (tmp_path / image_folder / "image.sqfs.env").write_text("")
    assert sl.main(["--gpus=none", "--dry-run", f"--work={tmp_path / work_folder}", "--", "true"], str(img)) == 2
    assert said in capsys.readouterr().err


def test_run_as_a_module_it_takes_no_dotenv_of_the_current_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("SECRET=1\n")
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    assert sl.main(["--gpus=none", "--dry-run", f"--image={unpacked}", "--", "true"], "") == 2
    assert "the .env file" in capsys.readouterr().err
