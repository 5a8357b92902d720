"""System description: cm4mlops' detect-cpu + get-mlperf-inference-sut-description against ours,
side by side on this machine, one run.

Reference: the two script folders of mlcommons/cm4mlops, read at run time from a git directory
(`--reference-git`, e.g. what the `fetch` tool brings: /work/.mirror/mlcommons+cm4mlops/repo) into a
temp folder and run beside the project: detect-cpu's run.sh with bash, its customize.postprocess,
then the SUT description's customize.preprocess (which writes suts/<name>.json from its
hardware/default.json). Nothing of it is copied into this repository.
Ours: mlperf_llm.sysinfo.probe.collect() + sut.build_sut_description().

Prints the median wall time of each over --runs, the ratio, and the 35 required fields side by
side: how many each side filled from detection, left at a fixed default, or left empty.

    PYTHONPATH=automation python benchmarks/sysinfo_detect.py --reference-git DIR [--runs 5]
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "automation"))

from mlperf_llm.sysinfo.probe import collect  # noqa: E402
from mlperf_llm.sysinfo.sut import (MEANINGFUL_FIELDS, REQUIRED_FIELDS, SoftwareStack, SutInputs,  # noqa: E402
                                    build_sut_description)

FOLDERS = ("script/detect-cpu", "script/get-mlperf-inference-sut-description")


def extract(git_dir: str, dest: str) -> None:
    for folder in FOLDERS:
        archive = subprocess.run(["git", "--git-dir", git_dir, "archive", "HEAD", folder],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Logger:
    def warning(self, *a):
        pass

    info = warning


class _Automation:
    class cmind:              # noqa: N801  (the attribute path their hook reads)
        logger = _Logger()


def os_env() -> dict:
    rel = dict(line.strip().split("=", 1) for line in open("/etc/os-release") if "=" in line)
    return {"CM_HOST_OS_TYPE": "linux", "CM_HOST_OS_FLAVOR": rel.get("ID", "").strip('"'),
            "CM_HOST_OS_VERSION": rel.get("VERSION_ID", "").strip('"'),
            "CM_HOST_OS_KERNEL_VERSION": platform.release(), "CM_HOST_OS_GLIBC_VERSION": platform.libc_ver()[1],
            "CM_HOST_SYSTEM_NAME": platform.node(), "CM_PYTHON_VERSION": platform.python_version()}


def reference_once(ref_root: str, work: str) -> dict:
    env = os_env()
    cpu_dir = os.path.join(ref_root, FOLDERS[0])
    sut_dir = os.path.join(ref_root, FOLDERS[1])
    cwd = os.getcwd()
    os.chdir(work)
    try:
        for f in ("tmp-run-env.out", "tmp-lscpu.out"):
            if os.path.exists(f):
                os.remove(f)
        subprocess.run(["bash", os.path.join(cpu_dir, "run.sh")], env=dict(os.environ, **env), check=True,
                       capture_output=True)
        for line in open("tmp-run-env.out"):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                env[k] = v
        i = {"env": env, "state": {}, "os_info": {"platform": "linux"}, "automation": _Automation()}
        _load(os.path.join(cpu_dir, "customize.py"), "ref_detect_cpu").postprocess(i)
        env.update({"CM_MLPERF_INFERENCE_SUT_DESC_PATH": work, "CM_MLPERF_SUBMITTER": "Acme"})
        i = {"env": env, "state": {}, "os_info": {"platform": "linux"}, "run_script_input": {"path": sut_dir}}
        _load(os.path.join(sut_dir, "customize.py"), "ref_sut").preprocess(i)
        return i["state"]["CM_SUT_META"]
    finally:
        os.chdir(cwd)


def ours_once() -> dict:
    desc = build_sut_description(collect(), SutInputs(hw_name=platform.node().replace("-", "_"), submitter="Acme"),
                                 SoftwareStack(python_version=platform.python_version()))
    return desc.fields


def timed(fn, runs: int):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _crashed(side: str, e: Exception) -> int:
    detail = getattr(e, "stderr", None)
    detail = detail.decode(errors="replace") if isinstance(detail, bytes) else (detail or "")
    tail = "\n  ".join(detail.strip().splitlines()[-10:])
    print(f"sysinfo_detect: FAILED, no result: the {side} side crashed: {type(e).__name__}: {e}"
          + (f"\n  {tail}" if tail else ""), file=sys.stderr)
    return 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-git", required=True, help="git dir of mlcommons/cm4mlops")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref_root, work = os.path.join(tmp, "ref"), os.path.join(tmp, "work")
        os.makedirs(ref_root)
        os.makedirs(work)
        try:
            extract(args.reference_git, ref_root)
            ref_default = json.load(open(os.path.join(ref_root, FOLDERS[1], "hardware", "default.json")))
            with contextlib.redirect_stdout(io.StringIO()):          # its "Generating SUT description ..." lines
                t_ref, ref = timed(lambda: reference_once(ref_root, work), args.runs)
        except Exception as e:
            return _crashed("cm4mlops", e)
        try:
            t_ours, ours = timed(ours_once, args.runs)
        except Exception as e:
            return _crashed("ours", e)
    print(f"median of {args.runs} runs: cm4mlops {t_ref * 1000:.1f} ms, ours {t_ours * 1000:.1f} ms, "
          f"ratio ours/cm4mlops {t_ours / t_ref:.2f}")
    print(f"\n{'field':36} {'cm4mlops':42} ours")
    counts = {"ref_bad": 0, "ref_default": 0, "ours_bad": 0, "ours_undefined": 0, "same": 0}
    for k in REQUIRED_FIELDS:
        r, o = ref.get(k), ours.get(k)
        counts["ref_bad"] += r is None or (k in MEANINGFUL_FIELDS and not r)
        counts["ours_bad"] += o is None or (k in MEANINGFUL_FIELDS and not o)
        counts["ref_default"] += r is not None and k in ref_default and ref_default[k] == r
        counts["ours_undefined"] += o == "undefined"
        counts["same"] += r == o
        print(f"{k:36} {str(r)[:42]:42} {o}")
    print(f"\n{len(REQUIRED_FIELDS)} required fields; checker errors (missing, or empty where a meaningful "
          f"answer is required): cm4mlops {counts['ref_bad']}, ours {counts['ours_bad']}.")
    print(f"cm4mlops: {counts['ref_default']} fields equal its fixed default.json value (right or not), "
          f"nothing marked for review. ours: {counts['ours_undefined']} 'undefined', every default and "
          f"gap listed for review. identical values: {counts['same']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
