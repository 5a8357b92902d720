"""On a node with an NVIDIA GPU: an image as one SquashFS file, run by its launcher (IMAGE.sqfs.run,
containers/squash_launcher.py) with Charliecloud's ch-run as a non-root uid, reaches the GPU through
the host's driver: the driver API loaded in the image from the staged driver, a megabyte set on each
device and read back, nvidia-smi's view, all as torch sees the node. Also from a folder unpacked from
the file, which needs no FUSE. The image (GPU_CHECK_IMAGE) and Charliecloud's runtime travel with the
check (benchmarks/gpu_wheels.sh): Debian 12 with python3, the image's base smaller, to fit the carry."""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from mlperf_llm.containers import squash

pytestmark = pytest.mark.gpu
PROBE = Path(__file__).resolve().parents[1] / "fixtures" / "cuda" / "cuda_probe.py"
EPOCH = 1700000000


@pytest.fixture
def shared(request):
    """A folder a non-root uid can reach (pytest's base is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="cm4mlperf-gpu-sq-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(folder, ignore_errors=True))
    folder.chmod(0o755)
    return folder


@pytest.mark.parametrize("form", ["squashfs", "folder"])
def test_the_image_reaches_the_gpu_as_a_non_root_uid_through_the_hosts_driver(form, shared):
    import torch
    given = os.environ.get("GPU_CHECK_IMAGE", "")
    if not given or not os.path.isfile(given):
        pytest.skip("no image carried: GPU_CHECK_IMAGE names none (benchmarks/gpu_wheels.sh makes it)")
    if not shutil.which("ch-run"):
        pytest.skip("no ch-run on PATH (benchmarks/gpu_check.sh unpacks the carried Charliecloud runtime)")
    img = shared / "image.sqfs"
    shutil.copyfile(given, img)
    squash.write_beside(str(img), EPOCH)
    image = str(img)
    if form == "folder":
        if not shutil.which("unsquashfs"):
            pytest.skip("no unsquashfs on PATH (squashfs-tools)")
        subprocess.run(["unsquashfs", "-q", "-n", "-d", str(shared / "image"), str(img)], check=True, timeout=300)
        shutil.copyfile(f"{img}.env", shared / "image.env")
        image = str(shared / "image")
    work = shared / "work"
    work.mkdir()
    shutil.copyfile(PROBE, work / "cuda_probe.py")
    argv = [f"{img}.run", f"--image={image}", "--gpus=auto", f"--work={work}", "--", "python3", "/mnt/cuda_probe.py"]
    uid = os.getuid()
    if uid == 0:
        uid = 1000
        shutil.chown(work, uid, uid)
        shutil.chown(work / "cuda_probe.py", uid, uid)
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    env = {k: v for k, v in os.environ.items() if k != "USER"}     # the launcher gives ch-run one
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    print(res.stderr.strip(), res.stdout.strip(), sep="\n")          # kept in the check's log
    if form == "squashfs" and not _fuse_open_to(uid):
        assert res.returncode == 2 and "/dev/fuse is not open to uid" in res.stderr and "unsquashfs -d" in res.stderr
        pytest.skip(f"this node's /dev/fuse is closed to uid {uid} ({_fuse_mode()}): ch-run cannot mount a SquashFS; "
                    "the launcher refused, naming the fix (checked); the folder form runs the GPU route")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "NVIDIA driver" in res.stderr
    probe = json.loads(res.stdout.strip().splitlines()[-1])
    assert probe["uid"] == uid and "bookworm" in probe["os"]          # the image's system, as that uid
    assert probe["libcuda"].startswith("/mnt/.host-gpu/nvidia-"), probe["libcuda"]
    seen = [(torch.cuda.get_device_name(i), torch.cuda.get_device_properties(i).total_memory)
            for i in range(torch.cuda.device_count())]
    assert [d["name"] for d in probe["devices"]] == [name for name, _ in seen]
    for d, (_, total) in zip(probe["devices"], seen):
        assert abs(d["memory_bytes"] - total) <= 0.01 * total and d["read_back_ok"], d
    assert all(name in probe["nvidia_smi"] for name, _ in seen), probe["nvidia_smi"]


def _fuse_mode() -> str:
    try:
        return f"mode {os.stat('/dev/fuse').st_mode & 0o777:04o}"
    except OSError:
        return "no /dev/fuse"


def _fuse_open_to(uid: int) -> bool:
    """Whether uid may open /dev/fuse (root may; another uid by the device's mode for others, as the
    check's uid 1000 is neither its owner nor in its group)."""
    try:
        mode = os.stat("/dev/fuse").st_mode
    except OSError:
        return False
    return uid == 0 or mode & 0o006 == 0o006 or (uid == os.getuid() and os.access("/dev/fuse", os.R_OK | os.W_OK))
