"""The GPU check's two helpers (benchmarks/gpu_check.sh):

    python benchmarks/gpu_check.py missing        the distributions to install from the carried
                                                  wheels: those of the modules this python lacks
    python benchmarks/gpu_check.py table JUNIT    what ran, passed, or could not run there and why;
                                                  exit 0 all passed, 1 a failure, 2 nothing ran

It runs in the node's own python (CUDA, torch, transformers; no vLLM, no network): standard library only.
"""
from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# distribution the GPU tests need (pytest's dependencies included: the wheels are installed with
# --no-deps, offline) -> the module that shows it is there
NEEDED = {"pytest": "pytest", "iniconfig": "iniconfig", "pluggy": "pluggy", "packaging": "packaging",
          "pygments": "pygments", "mlcommons-loadgen": "mlperf_loadgen"}
# what the node must have already (not carried: too large, or the point of the node)
PRESENT = ("torch", "transformers", "tokenizers")


def missing() -> list[str]:
    return [dist for dist, module in NEEDED.items() if importlib.util.find_spec(module) is None]


def rows(junit: Path) -> list[tuple[str, str, str]]:
    """(test, result, detail) per test case of the junit file."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "?")
        skipped = case.find("skipped")
        failure = case.find("failure") if case.find("failure") is not None else case.find("error")
        if skipped is not None:
            out.append((name, "not run", skipped.get("message", "").removeprefix("Skipped: ")))
        elif failure is not None:
            out.append((name, "FAILED", ((failure.get("message") or "").splitlines() or [""])[0][:160]))
        else:
            out.append((name, "passed", f"{float(case.get('time', 0)):.1f} s"))
    return out


def table(junit: Path) -> int:
    if not junit.is_file():
        absent = [m for m in (*PRESENT, *NEEDED.values()) if importlib.util.find_spec(m) is None]
        print(f"GPU check: no test ran (no {junit}): " +
              (f"this python lacks {', '.join(absent)}" if absent else "pytest did not start (see pytest.log)"))
        return 2
    found = rows(junit)
    width = max([len(n) for n, _, _ in found] + [4])
    print(f"{'test':<{width}}  {'result':<8}  detail")
    for name, result, detail in found:
        print(f"{name:<{width}}  {result:<8}  {detail}")
    if any(r == "FAILED" for _, r, _ in found):
        return 1
    return 0 if any(r == "passed" for _, r, _ in found) else 2


if __name__ == "__main__":
    if sys.argv[1:2] == ["missing"]:
        print(" ".join(missing()))
        sys.exit(0)
    if sys.argv[1:2] == ["table"] and len(sys.argv) == 3:
        sys.exit(table(Path(sys.argv[2])))
    sys.exit("usage: gpu_check.py missing | table JUNIT_XML")
