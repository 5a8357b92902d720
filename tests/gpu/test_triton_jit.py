"""On a node with an NVIDIA GPU: why an image whose venv runs Triton on a GPU carries a C compiler
(containers/base.JIT_COMPILER). Triton compiles a kernel's launcher with cc when it first runs the
kernel: with a compiler found the kernel runs; with none, it fails as an image without one would."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

KERNEL = """
import torch, triton, triton.language as tl
@triton.jit
def add_one(x, n: tl.constexpr):
    i = tl.arange(0, n)
    tl.store(x + i, tl.load(x + i) + 1)
x = torch.zeros(16, device="cuda")
add_one[(1,)](x, 16)
torch.cuda.synchronize()
print("ran", int(x.sum().item()))
"""


def run_kernel(tmp_path, name: str, path: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path, "TRITON_CACHE_DIR": str(tmp_path / name)}   # nothing compiled before
    env.pop("CC", None)
    script = tmp_path / "kernel.py"                  # Triton reads a kernel's source from its file
    script.write_text(KERNEL)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)


def test_triton_compiles_its_launcher_with_cc_when_it_first_runs_a_kernel(tmp_path):
    pytest.importorskip("triton", reason="no Triton in this python")
    with_cc = run_kernel(tmp_path, "with", os.environ.get("PATH", "/usr/bin:/bin"))
    assert with_cc.returncode == 0 and with_cc.stdout.strip().splitlines()[-1] == "ran 16", with_cc.stderr[-2000:]
    none = tmp_path / "no-compiler"
    none.mkdir()
    without = run_kernel(tmp_path, "without", str(none))       # no cc, gcc or clang on PATH
    print(without.stderr.strip().splitlines()[-1:])             # kept in the check's log
    assert without.returncode != 0 and "Failed to find C compiler" in without.stderr, without.stderr[-2000:]
