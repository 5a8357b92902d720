"""The base of an image whose venv runs Triton on a GPU (base.JIT_COMPILER: vLLM's CUDA and ROCm
builds), built by the real mmdebstrap from the host's apt mirror, compiles and loads a Python C
extension inside, the way Triton builds its kernel launchers at run time (cc -shared -fPIC against
Python's headers; triton/runtime/build.py); the CPU base has no compiler. No GPU needed: the compiler,
not the GPU, is what an image without it lacks ("Failed to find C compiler"). Run in the image with
Charliecloud's ch-run, from a folder (no podman store). Skips, saying why, where the tools are missing."""
import shutil
import subprocess

import pytest

from mlperf_llm.containers import base

TOOLS = ("mmdebstrap", "ch-convert", "ch-run")
MISSING = [t for t in TOOLS if not shutil.which(t)]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed (.ci/run installs them)")

# what Triton's build does, in the image's python: a module's C source compiled with cc against the
# C library's and Python's headers into an extension, then imported and called
LAUNCHER_LIKE = r'''
import importlib.util, os, shutil, subprocess, sysconfig, tempfile
src = """#include <Python.h>
#include <stdlib.h>
static PyObject *launch(PyObject *self, PyObject *args) { return PyLong_FromLong(abs(-42)); }
static PyMethodDef M[] = {{"launch", launch, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "launcher", NULL, -1, M};
PyMODINIT_FUNC PyInit_launcher(void) { return PyModule_Create(&D); }
"""
cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
if cc is None:
    raise SystemExit("Failed to find C compiler")
d = tempfile.mkdtemp()
open(os.path.join(d, "launcher.c"), "w").write(src)
so = os.path.join(d, "launcher" + sysconfig.get_config_var("EXT_SUFFIX"))
subprocess.check_call([cc, os.path.join(d, "launcher.c"), "-O3", "-shared", "-fPIC", "-o", so,
                       "-I" + sysconfig.get_paths()["include"]])
spec = importlib.util.spec_from_file_location("launcher", so)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print("launched", m.launch())
'''


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    """The GPU venvs' base (mmdebstrap, the host's mirror) as a folder ch-run runs."""
    mirror, snapshot = base.host_mirror()
    spec = base.BaseSpec(mirror, packages=base.PACKAGES + base.JIT_COMPILER, snapshot=snapshot)
    work = tmp_path_factory.mktemp("jit-base")
    built = base.build(spec, str(work / "base.tar"))
    assert {"gcc", "libc6-dev", "python3-dev"} <= {name for name, _ in built.packages}
    folder = work / "image"
    subprocess.run(["ch-convert", "-i", "tar", "-o", "dir", built.tar, str(folder)], check=True, capture_output=True,
                   timeout=600)
    return folder


def test_the_gpu_venvs_base_builds_and_loads_a_launcher_as_triton_does(unpacked):
    res = subprocess.run(["ch-run", "--unset-env=PYTHONPATH", str(unpacked), "--", "python3", "-c", LAUNCHER_LIKE],
                         capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "USER": "root"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "launched 42"
