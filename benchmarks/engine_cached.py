"""Cached runs: our engine against cmind + cm4mlops and against mlcflow, side by side, one run.

For each engine, in its own venv (created or reused under --venvs, installed by pip only):

  ours      cmind 4.2.0 + this repository (`pip install <repo>`; registered by cmind on import)
  cm4mlops  cmind 4.2.0 + PyPI cm4mlops; its script repository (mlcommons/cm4mlops: detect-os and
            the 6,600-line automation/script/module.py) registered offline in repos.json
  mlcflow   mlcflow 1.3.8 (`mlc run script`) + the mlcommons/mlperf-automations script repository,
            registered offline with `mlc add repo PATH`

it times, as the user meets them (the real `cm`/`mlc` command in a subprocess, wall clock, median
of --runs after --warmup runs):

  version   `cm version` / `mlc version`: interpreter + CLI start, no repository work
  detect,os `cm run script --tags=detect,os --quiet`, all caches warm (our detect-os and cm4mlops'
            are `cache: false`: they run each time; mlperf-automations' is `cache: true`)
  chain     `cm run script --tags=bench-chain,s01 --quiet` on a generated fixture repository:
            s01 -> s02 -> ... -> s30, each `cache: true` with a trivial run.sh, all cached

then edits run.sh of the script in the middle of the chain and runs the chain once more, to see
which scripts each engine runs again (a correct cache re-runs the edited one and those above it).

For ours it also times cached `detect,os` in a second CM home where the cm4mlops repository is
registered too (~300 manifests, ~95 of which our engine cannot use yet), alternating run by run
with the home without it, and prints the ratio (target: within 1.5x) and how many warning lines
the first and the later runs print.

The fixture's run.sh files append to marker files outside the caches, so the benchmark also
checks that no script ran during the timed "cached" runs. The machine may be shared: the load
average is printed before and after, and the CPU time of the timed commands beside their wall time.

    python benchmarks/engine_cached.py [--runs 15] [--venvs DIR] [--engines ours,cm4mlops,mlcflow]
        [--cm4mlops-repo /tmp/cm4mlops] [--mlperf-automations /tmp/mlperf-automations] [--profile]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_AUTOMATION_UID = "5b4e0237da074764"
TARGETS = {"detect": 0.10, "chain": 0.15}
BESIDE_TARGET = 1.5   # cached detect,os with cm4mlops registered, relative to without
DETECT_ARGS = ["run", "script", "--tags=detect,os", "--quiet"]
CHAIN_ARGS = ["run", "script", "--tags=bench-chain,s01", "--quiet"]
ISOLATED_PREFIXES = ("CM_", "MLC_", "CM4MLPERF_")
ISOLATED_KEYS = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP"}
COPY_IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                     ".pytest_cache", "*.pyc", ".ci")


class Unavailable(Exception):
    """An engine that cannot be installed or run here; the message says why."""


# -- the fixture chain ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Flavor:
    """Manifest dialect: CM (cmind, ours, cm4mlops) or MLC (mlcflow, mlperf-automations)."""
    name: str
    repo_meta: str      # cmr.yaml / meta.yaml at the repository root
    script_meta: str    # _cm.yaml / meta.yaml in a script folder
    env_prefix: str     # CM_ / MLC_


CM = Flavor("cm", "cmr.yaml", "_cm.yaml", "CM_")
MLC = Flavor("mlc", "meta.yaml", "meta.yaml", "MLC_")


def _uid(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def script_name(k: int) -> str:
    return f"s{k:02d}"


def write_chain(root: Path, flavor: Flavor, length: int, markers: Path) -> None:
    """A script repository where s01 depends on s02, ... on s<length>; every run.sh appends a
    line to markers/<name> (outside any cache) and passes one env value up."""
    root.mkdir(parents=True)
    markers.mkdir(parents=True, exist_ok=True)
    (root / flavor.repo_meta).write_text(
        f"alias: bench-chain-{flavor.name}\nuid: {_uid('repo' + flavor.name)}\ngit: false\n")
    for k in range(1, length + 1):
        name = script_name(k)
        folder = root / "script" / f"bench-chain-{name}"
        folder.mkdir(parents=True)
        key = f"{flavor.env_prefix}BENCH_{name.upper()}"
        deps = (f"deps:\n  - tags: bench-chain,{script_name(k + 1)}\n" if k < length else "")
        (folder / flavor.script_meta).write_text(
            f"alias: bench-chain-{name}\nuid: {_uid(flavor.name + name)}\n"
            f"automation_alias: script\nautomation_uid: {SCRIPT_AUTOMATION_UID}\n"
            f"tags: [bench-chain, {name}]\ncache: true\n{deps}new_env_keys: [{key}]\n")
        run = folder / "run.sh"
        run.write_text(f"#!/bin/bash\necho ran >> '{markers / name}'\n"
                       f"echo '{key}=ok' > tmp-run-env.out\n")
        run.chmod(0o755)


def marker_counts(markers: Path) -> dict[str, int]:
    return {p.name: len(p.read_text().splitlines()) for p in sorted(markers.iterdir())}


# -- engines -----------------------------------------------------------------------------------
@dataclass
class Engine:
    name: str
    label: str
    cli: str                       # 'cm' or 'mlc'
    flavor: Flavor
    venv: Path
    home_var: str                  # CM_REPOS / MLC_REPOS
    notes: list[str] = field(default_factory=list)
    home: Optional[Path] = None
    cwd: Optional[Path] = None
    fixture: Optional[Path] = None
    markers: Optional[Path] = None

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(ISOLATED_PREFIXES) and k not in ISOLATED_KEYS}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env[self.home_var] = str(self.home)
        return env

    def command(self, *args: str) -> list[str]:
        return [str(self.bin / self.cli), *args]


def pip(engine: Engine, *args: str) -> None:
    cmd = [str(engine.bin / "python"), "-m", "pip", "install", "-q", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-6:])
        raise Unavailable(f"`pip install {' '.join(args)}` failed:\n{tail}")


def tree_stamp(path: Path) -> str:
    """Size and mtime of every file that `pip install <repo>` would take."""
    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in {".git", "build", "dist", "__pycache__",
                                                        ".pytest_cache", ".ci"}
                         and not d.endswith(".egg-info"))
        for f in sorted(files):
            st = os.stat(os.path.join(dirpath, f))
            h.update(f"{os.path.relpath(os.path.join(dirpath, f), path)}:{st.st_size}:"
                     f"{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def ensure_venv(engine: Engine, stamp: str, install) -> None:
    """Create the venv if missing; (re)install when the stamp of what it should hold changed."""
    stamp_file = engine.venv / ".bench-stamp"
    if not (engine.bin / "python").exists():
        engine.venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(engine.venv)], check=True)
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        engine.notes.append(f"venv reused: {engine.venv}")
        return
    t0 = time.time()
    install()
    stamp_file.write_text(stamp)
    engine.notes.append(f"venv installed in {time.time() - t0:.0f} s: {engine.venv}")


def setup_ours(engine: Engine, repo: Path, work: Path) -> None:
    def install():
        src = work / "ours-src"          # pip builds in-tree: keep build/ out of the repository
        shutil.copytree(repo, src, ignore=COPY_IGNORE)
        pip(engine, "cmind==4.2.0")
        pip(engine, "--force-reinstall", "--no-deps", str(src))
    ensure_venv(engine, f"cmind==4.2.0 {repo} {tree_stamp(repo)}", install)
    write_repos_json(engine, [engine.fixture])


def setup_cm4mlops(engine: Engine, script_repo: Path) -> None:
    def install():
        # cm4mlops' sdist declares a cmind from a git URL as a build requirement,
        # so it only builds here without build isolation. Its setup.py clones the script
        # repository from GitHub: offline, the build fails with the current setuptools/wheel
        # (older ones installed an empty package). Either way the work tree below is what runs.
        pip(engine, "cmind==4.2.0", "setuptools", "wheel")
        try:
            pip(engine, "--no-build-isolation", "cm4mlops")
        except Unavailable as e:
            engine.notes.append("PyPI cm4mlops did not build offline (its setup.py clones the "
                                f"repository): {str(e).splitlines()[-1][:160]}")
    ensure_venv(engine, "cmind==4.2.0 cm4mlops --no-build-isolation", install)
    shipped = subprocess.run(
        [str(engine.bin / "python"), "-c", "import importlib.util as u, os; "
         "s = u.find_spec('cm4mlops'); print(s.submodule_search_locations[0] if s and "
         "s.submodule_search_locations else '')"], capture_output=True, text=True).stdout.strip()
    version = subprocess.run([str(engine.bin / "python"), "-m", "pip", "show", "cm4mlops"],
                             capture_output=True, text=True).stdout
    version = next((ln.split(":", 1)[1].strip() for ln in version.splitlines()
                    if ln.startswith("Version:")), "(not installed)")
    if shipped and (Path(shipped) / "cmr.yaml").exists():
        engine.notes.append(f"PyPI cm4mlops {version} ships its repository: {shipped}")
        write_repos_json(engine, [engine.fixture])
        return
    if version != "(not installed)":
        engine.notes.append(
            f"PyPI cm4mlops {version} installs no files (no importable `cm4mlops`, no cmr.yaml): its "
            "setup.py pulls the script repository with git at install time, which cannot work offline")
    engine.notes.append(f"using the mlcommons/cm4mlops work tree at {script_repo}")
    if not (script_repo / "cmr.yaml").exists() or not (script_repo / "automation" / "script"
                                                      / "module.py").exists():
        raise Unavailable(f"no cm4mlops script repository at {script_repo} (cmr.yaml and "
                          "automation/script/module.py); check out mlcommons/cm4mlops there or "
                          "pass --cm4mlops-repo")
    engine.notes.append(f"cm4mlops repository commit: {git_head(script_repo)}")
    write_repos_json(engine, [script_repo, engine.fixture])


def setup_mlcflow(engine: Engine, script_repo: Path) -> None:
    ensure_venv(engine, "mlcflow==1.3.8", lambda: pip(engine, "mlcflow==1.3.8"))
    if not (script_repo / "meta.yaml").exists() or not (script_repo / "script").is_dir():
        raise Unavailable(f"no mlperf-automations script repository at {script_repo}; check out "
                          "mlcommons/mlperf-automations there or pass --mlperf-automations")
    engine.notes.append(f"mlperf-automations commit: {git_head(script_repo)}")
    for repo in (script_repo, engine.fixture):          # the offline form of `mlc pull repo`
        p = subprocess.run(engine.command("add", "repo", str(repo)), env=engine.env(),
                           cwd=engine.cwd, capture_output=True, text=True, timeout=600)
        if p.returncode:
            raise Unavailable(f"`mlc add repo {repo}` failed: {p.stderr.strip()[-400:]}")


def write_repos_json(engine: Engine, repos: list[Path]) -> None:
    (engine.home / "repos.json").write_text(json.dumps([str(r) for r in repos], indent=2))


def git_head(path: Path) -> str:
    p = subprocess.run(["git", "-C", str(path), "log", "-1", "--format=%H %cs"],
                       capture_output=True, text=True)
    return p.stdout.strip() or "not a git work tree"


# -- timing ------------------------------------------------------------------------------------
@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    error: str = ""

    @property
    def median(self) -> Optional[float]:
        return statistics.median(self.wall) if self.wall and not self.error else None

    def cell(self) -> str:
        if self.median is None:
            return "n/a"
        return (f"{self.median:.3f} (min {min(self.wall):.3f}, "
                f"cpu {statistics.median(self.cpu):.3f})")

    def short(self) -> str:
        return "n/a" if self.median is None else \
            f"{self.median:.3f} ({statistics.median(self.cpu):.3f})"


def run_once(engine: Engine, args: list[str], timeout: float = 600) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(engine.command(*args), env=engine.env(), cwd=engine.cwd,
                       capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        out = "\n".join((p.stdout + p.stderr).strip().splitlines()[-8:])
        raise RuntimeError(f"`{engine.cli} {' '.join(args)}` exited {p.returncode}:\n{out}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(engine: Engine, args: list[str], runs: int, warmup: int, budget: float) -> Timing:
    """Median over `runs` timed runs after `warmup` untimed ones; a slow engine stops after
    `budget` seconds of timed runs (at least 3 runs)."""
    t = Timing()
    try:
        for _ in range(warmup):
            run_once(engine, args)
        spent = 0.0
        for i in range(runs):
            wall, cpu = run_once(engine, args)
            t.wall.append(wall)
            t.cpu.append(cpu)
            spent += wall
            if spent > budget and i >= 2:
                break
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        t.error = str(e)
    return t


def measure_beside(engine: Engine, cm4mlops: Path, runs: int, warmup: int) -> dict:
    """Cached detect,os of ours with the cm4mlops repository registered beside the fixture, run
    alternately with the home without it (a shared machine's load hits both alike)."""
    from dataclasses import replace
    home = engine.home.parent / "home-beside-cm4mlops"
    home.mkdir(parents=True, exist_ok=True)
    beside = replace(engine, home=home, notes=[])
    write_repos_json(beside, [engine.fixture, cm4mlops])
    out = {"alone": Timing(), "beside": Timing(), "first_warnings": 0, "later_warnings": 0}
    try:
        for k in range(max(2, warmup)):   # the first run fills the per-script memo
            p = subprocess.run(beside.command(*DETECT_ARGS), env=beside.env(), cwd=beside.cwd,
                               capture_output=True, text=True, timeout=600)
            if p.returncode:
                raise RuntimeError(f"exited {p.returncode}: {p.stderr.strip()[-400:]}")
            n = sum(1 for ln in p.stderr.splitlines() if ln.startswith("warning"))
            out["first_warnings" if k == 0 else "later_warnings"] += n
        for _ in range(runs):
            for t, e in ((out["alone"], engine), (out["beside"], beside)):
                wall, cpu = run_once(e, DETECT_ARGS)
                t.wall.append(wall)
                t.cpu.append(cpu)
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        out["beside"].error = str(err)
    return out


def stale_check(engine: Engine, chain_args: list[str], length: int) -> str:
    """Edit run.sh of the middle script, run the chain once, say which scripts ran again."""
    middle = script_name((length + 1) // 2)
    run_sh = engine.fixture / "script" / f"bench-chain-{middle}" / "run.sh"
    before = marker_counts(engine.markers)
    with run_sh.open("a") as f:
        f.write("# edited by the benchmark: a changed script must run again\n")
    try:
        run_once(engine, chain_args)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return f"the chain failed after the edit: {e}"
    after = marker_counts(engine.markers)
    reran = sorted(n for n in after if after[n] > before.get(n, 0))
    if middle not in reran:
        return (f"STALE: edited {middle}/run.sh, nothing re-ran ({len(reran)} scripts ran); "
                f"the old cached result was reused")
    return (f"edited {middle}/run.sh: {middle} re-ran, and the {len(reran) - 1} scripts above it "
            f"({reran[0]}..{reran[-1]})")


PHASES = r"""
import contextlib, io, json, os, sys, time
clock = time.process_time
T, t0 = {}, clock()
import yaml, cmind, cmind.cli, cmind.core, cmind.repos, cmind.utils
T["import yaml + cmind"] = clock() - t0
import cm4mlperf_llm
sys.path.insert(0, os.path.join(os.path.dirname(cm4mlperf_llm.__file__), "automation"))
t = clock()
import cmengine.cli, cmengine.executor   # module.py's `from cmengine import cli` reuses these
T["import cmengine (cli, executor)"] = clock() - t

def wrap(obj, name, label):
    f = getattr(obj, name, None)
    if f is None:
        return
    def timed(*a, **k):
        s = clock()
        try:
            return f(*a, **k)
        finally:
            T[label] = T.get(label, 0.0) + clock() - s
    setattr(obj, name, timed)

wrap(cmind.repos.Repos, "load", "cmind: load repositories (cmr.yaml)")
wrap(cmind.utils, "load_python_module", "cmind: load automation module.py")
wrap(getattr(cmengine.cli, "Session", None), "__init__", "engine: session (registry, store)")
wrap(getattr(cmengine.cli, "Session", None), "plan", "engine: plan (resolve, keys, verdicts)")
wrap(getattr(cmengine.executor, "Executor", None), "run", "engine: execute")
t = clock()
with contextlib.redirect_stdout(io.StringIO()):
    r = cmind.access(sys.argv[1:])
T["cmind.access (all of the above after imports)"] = clock() - t
T["this process, after interpreter start"] = clock() - t0
print(json.dumps(T if r.get("return") == 0 else {"error": r.get("error", "?")}))
"""


def profile_ours(engine: Engine, args: list[str], runs: int, top: int) -> str:
    """Where a cached `cm ARGS` of ours spends its CPU: a phase breakdown (median of `runs`
    processes) and the `top` functions of one cProfile run by cumulative time."""
    py = str(engine.bin / "python")
    rows = []
    for _ in range(runs):
        p = subprocess.run([py, "-c", PHASES, *args], env=engine.env(), cwd=engine.cwd,
                           capture_output=True, text=True, timeout=600)
        if p.returncode or not p.stdout.strip():
            return f"phase run failed: {(p.stdout + p.stderr).strip()[-600:]}"
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
    if "error" in rows[0]:
        return f"phase run failed: {rows[0]['error']}"
    start = [run_once(engine, ["version"])[1] for _ in range(3)]
    out = [f"    {statistics.median(r.get(k, 0.0) for r in rows) * 1000:7.1f} ms  {k}"
           for k in rows[0]]
    lines = ["  CPU time by phase (median of %d processes):" % runs, *out]
    interp = subprocess.run([py, "-c", "import time; print(time.process_time())"],
                            capture_output=True, text=True, env=engine.env()).stdout.strip()
    lines.append(f"    interpreter start (process_time at first line): {float(interp) * 1000:.1f}"
                 f" ms; whole `cm version` process: {statistics.median(start) * 1000:.1f} ms CPU")
    prof = engine.cwd / "profile.prof"
    subprocess.run([py, "-m", "cProfile", "-o", str(prof), str(engine.bin / engine.cli), *args],
                   env=engine.env(), cwd=engine.cwd, capture_output=True, timeout=600)
    code = (f"import pstats, io; s = io.StringIO(); p = pstats.Stats({str(prof)!r}, stream=s); "
            f"p.sort_stats('cumulative').print_stats({top}); print(s.getvalue())")
    p = subprocess.run([py, "-c", code], capture_output=True, text=True)
    lines.append(f"  cProfile of one run, top {top} by cumulative time (profiler overhead "
                 "inflates it):")
    lines += ["    " + ln.replace(str(engine.venv) + "/lib/python3.11/site-packages/", "")
              for ln in p.stdout.splitlines() if ln.strip() and "function calls" not in ln]
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------
def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def ratio(t: Timing, ours: Timing) -> str:
    if t.median is None or ours.median is None or not ours.median:
        return "n/a"
    return f"{t.median / ours.median:.1f}x"


def bench_engine(e: Engine, r: dict, a, work: Path) -> None:
    """Set up one engine, time its three cases, check an edit mid-chain; results into r."""
    print(f"\n## {e.label}", flush=True)
    try:
        if e.name == "ours":
            setup_ours(e, Path(a.repo), work)
        elif e.name == "cm4mlops":
            setup_cm4mlops(e, Path(a.cm4mlops_repo))
        else:
            setup_mlcflow(e, Path(a.mlperf_automations))
    except (Unavailable, subprocess.SubprocessError, OSError) as err:
        r["error"] = f"cannot be set up here: {err}"
        print(f"  {r['error']}")
        return
    for note in e.notes:
        print(f"  {note}")
    r["version"] = measure(e, ["version"], a.runs, 1, a.budget)
    r["detect"] = measure(e, DETECT_ARGS, a.runs, a.warmup, a.budget)
    r["chain"] = measure(e, CHAIN_ARGS, a.runs, max(1, a.warmup), a.budget)
    if not r["chain"].error:
        ran = {n: c for n, c in marker_counts(e.markers).items() if c > 1}
        if ran or len(marker_counts(e.markers)) != a.chain:
            r["chain"].error = f"not fully cached: scripts ran again during timed runs {ran}"
    for case in ("version", "detect", "chain"):
        t = r[case]
        print(f"  {case:8s} {t.cell()}  [{len(t.wall)} runs]" if not t.error
              else f"  {case:8s} FAILED: {t.error}", flush=True)
    if not r["chain"].error:
        r["stale"] = stale_check(e, CHAIN_ARGS, a.chain)
        print(f"  edit in the middle of the chain: {r['stale']}", flush=True)
    if e.name == "ours" and a.beside:
        cm4mlops = Path(a.cm4mlops_repo)
        if not (cm4mlops / "cmr.yaml").exists():
            r["beside"] = f"not measured: no cm4mlops repository at {cm4mlops} (--cm4mlops-repo)"
        else:
            b = measure_beside(e, cm4mlops, a.runs, a.warmup)
            alone, beside = b["alone"], b["beside"]
            if beside.error or alone.median is None:
                r["beside"] = f"FAILED: {beside.error or alone.error}"
            else:
                x = beside.median / alone.median
                r["beside"] = (
                    f"cached detect,os with cm4mlops ({cm4mlops}) registered: {beside.short()} s "
                    f"vs {alone.short()} s without, {x:.2f}x (target <= {BESIDE_TARGET}x: "
                    f"{'met' if x <= BESIDE_TARGET else 'MISSED'}); warning lines: "
                    f"{b['first_warnings']} on the first run, {b['later_warnings']} on the "
                    f"{max(2, a.warmup) - 1} later warm-up run(s)")
        print(f"  {r['beside']}", flush=True)
    if a.profile and e.name == "ours":
        for args in (DETECT_ARGS, CHAIN_ARGS):
            print(f"\n### Where ours spends a cached `cm {' '.join(args)}`", flush=True)
            print(profile_ours(e, args, a.profile_runs, 25))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="timed runs per case (median)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (fill caches)")
    ap.add_argument("--budget", type=float, default=90.0,
                    help="seconds of timed runs per case before a slow engine stops early")
    ap.add_argument("--chain", type=int, default=30, help="length of the fixture chain")
    ap.add_argument("--venvs", default="/tmp/cm4mlperf-bench-venvs", help="venvs made/reused here")
    ap.add_argument("--repo", default=str(ROOT), help="our repository (pip installed)")
    ap.add_argument("--engines", default="ours,cm4mlops,mlcflow")
    shared = ROOT.parent / "shared" / "cm4mlops"
    ap.add_argument("--cm4mlops-repo", default=str(shared if shared.exists() else "/tmp/cm4mlops"),
                    help="work tree of mlcommons/cm4mlops (PyPI's cm4mlops ships none); only "
                         "read (default: ../shared/cm4mlops next to this checkout)")
    ap.add_argument("--no-beside", dest="beside", action="store_false",
                    help="skip timing ours with cm4mlops registered beside it")
    ap.add_argument("--mlperf-automations", default="/tmp/mlperf-automations",
                    help="work tree of mlcommons/mlperf-automations, for mlcflow")
    ap.add_argument("--profile", action="store_true",
                    help="also show where ours spends its CPU (phases, cProfile)")
    ap.add_argument("--profile-runs", type=int, default=9, help="processes for the phase medians")
    ap.add_argument("--keep", action="store_true", help="keep the temporary homes and fixtures")
    a = ap.parse_args(argv)

    venvs = Path(a.venvs)
    work = Path(tempfile.mkdtemp(prefix="cm4mlperf-bench-"))
    names = [n.strip() for n in a.engines.split(",") if n.strip()]
    engines = {
        "ours": Engine("ours", "ours (cmind 4.2.0 + cm4mlperf-llm)", "cm", CM, venvs / "ours",
                       "CM_REPOS"),
        "cm4mlops": Engine("cm4mlops", "cmind 4.2.0 + cm4mlops", "cm", CM, venvs / "cm4mlops",
                           "CM_REPOS"),
        "mlcflow": Engine("mlcflow", "mlcflow 1.3.8 + mlperf-automations", "mlc", MLC,
                          venvs / "mlcflow", "MLC_REPOS"),
    }
    unknown = [n for n in names if n not in engines]
    if unknown:
        ap.error(f"--engines: unknown {unknown}; choose from {', '.join(engines)}")

    start_load = load()
    print(f"# engine_cached: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {start_load}")
    print(f"# {a.runs} timed runs after {a.warmup} warm-up runs, median wall seconds; "
          f"chain of {a.chain} cached scripts; work dir {work}")
    results: dict[str, dict] = {}
    for name in names:
        e = engines[name]
        e.home, e.cwd = work / name / "home", work / name / "cwd"
        e.fixture, e.markers = work / name / "fixture", work / name / "markers"
        e.home.mkdir(parents=True)
        e.cwd.mkdir(parents=True)
        write_chain(e.fixture, e.flavor, a.chain, e.markers)
        r = results[name] = {"version": Timing(), "detect": Timing(), "chain": Timing(),
                             "stale": "", "error": "", "beside": ""}
        bench_engine(e, r, a, work)

    ours = results.get("ours", {}).get("detect", Timing()), results.get("ours", {}).get(
        "chain", Timing())
    print(f"\n# Summary ({start_load} at start, {load()} at end)\n")
    print("Wall seconds, median (CPU seconds of the command and its children, median):\n")
    print(f"| engine | `version` (s) | cached detect,os (s) | cached {a.chain}-chain (s) | "
          "detect,os vs ours | chain vs ours | edited middle script |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        r = results[name]
        cells = [r[c].short() for c in ("version", "detect", "chain")]
        stale = r["stale"] or r["error"] or "not checked"
        print(f"| {engines[name].label} | {' | '.join(cells)} | {ratio(r['detect'], ours[0])} | "
              f"{ratio(r['chain'], ours[1])} | {stale.splitlines()[0]} |")
    if "ours" in results:
        print("\nTargets for ours: " + ", ".join(
            f"{case} <= {limit:.2f} s: {'n/a' if t.median is None else 'met' if t.median <= limit else 'MISSED'}"
            f" ({'n/a' if t.median is None else f'{t.median:.3f}'} s)"
            for (case, limit), t in zip(TARGETS.items(), ours)))
    if results.get("ours", {}).get("beside"):
        print(f"\nOurs beside cm4mlops: {results['ours']['beside']}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    failed = [f"{engines[n].label}: {results[n]['error'] or ', '.join(c for c in ('version', 'detect', 'chain') if results[n][c].error)}"
              for n in names if results[n]["error"] or any(results[n][c].error for c in ("version", "detect", "chain"))]
    if failed:   # a side that crashed or could not be set up has no number: the run is not a result
        print("\nengine_cached: FAILED, incomplete: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
