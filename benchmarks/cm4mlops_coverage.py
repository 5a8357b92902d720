"""How much of mlcommons/cm4mlops our engine takes: manifests that load, scripts that plan, and
offline scripts that run with the same env and state as under upstream's engine.

    python benchmarks/cm4mlops_coverage.py [--run] [--markdown]

Loads every manifest of ../shared/cm4mlops (a copy in a temporary folder), plans every script
that loads (`cm plan`: nothing runs), and with --run runs the offline sample under both engines
(upstream's through its own `cm` in a fresh CM home) and compares new_env and state. Prints one
row per category and the reasons for the rest; docs/cm4mlops.md holds its last output.
"""
from __future__ import annotations

import argparse
import collections
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "automation"))

from cmengine import cli  # noqa: E402
from cmengine.errors import ManifestError  # noqa: E402
from cmengine.manifest import load_manifest  # noqa: E402
from cmengine.registry import Registry, Repo  # noqa: E402

UPSTREAM = os.path.join(ROOT, "..", "shared", "cm4mlops")

# offline scripts: they only look at this host (no download, no install from the network)
OFFLINE = [
    ("detect-os", "", {}), ("detect-cpu", "", {}), ("detect-sudo", "", {}),
    ("get-python3", "", {}), ("get-generic-python-lib", "_package.pyyaml", {}),
    ("get-generic-python-lib", "_pip", {}), ("print-hello-world", "", {}),
    ("print-hello-world-py", "", {}), ("print-python-version", "", {}),
    ("dump-pip-freeze", "", {}), ("get-cmake", "", {}), ("get-git-repo", "_repo.{git}", {}),
    ("create-custom-cache-entry", "", {"path": "{tmp}", "env.CM_EXTRA_CACHE_TAGS": "mine"}),
    ("get-sys-utils-min", "", {}), ("get-generic-sys-util", "_wget", {}),
    ("get-gcc", "", {}), ("get-llvm", "", {}), ("get-java", "", {}), ("get-docker", "", {}),
    ("get-go", "", {}), ("get-conda", "", {}), ("get-onnxruntime-prebuilt", "", {}),
    ("print-any-text", "_text.hi", {}), ("detect-sudo", "", {}),
]


def category(m) -> str:
    return str(m.get("category") or "(none)")


def measure_load(repo: str):
    loaded, failed = [], []
    for name in sorted(os.listdir(os.path.join(repo, "script"))):
        folder = os.path.join(repo, "script", name)
        if not os.path.isdir(folder):
            continue
        try:
            m = load_manifest(folder)
            loaded.append(m)
        except ManifestError as e:
            cat = "(unreadable)"
            for fn in ("_cm.yaml", "_cm.json"):
                p = os.path.join(folder, fn)
                if os.path.isfile(p):
                    import yaml
                    try:
                        with open(p) as f:
                            d = yaml.safe_load(f) if fn.endswith("yaml") else json.load(f)
                        cat = str(d.get("category") or "(none)")
                    except Exception:
                        pass
            failed.append((name, cat, str(e).splitlines()[0]))
    return loaded, failed


def measure_plan(repo: str, loaded, cache: str):
    planned, failed = [], []
    session = cli.Session([Repo("cm4mlops", repo)], cache_dir=cache, out=io.StringIO())
    session.registry = Registry([Repo("cm4mlops", repo)])
    for m in loaded:
        i = {"action": "run", "artifact": m.alias, "quiet": True, "dry_run": True}
        err = io.StringIO()
        old = sys.stderr
        sys.stderr = err
        try:
            r = cli.guarded(lambda: session.run(i))
        finally:
            sys.stderr = old
        if r["return"] == 0:
            planned.append(m)
        else:
            failed.append((m.alias, category(m), r.get("error", "").splitlines()[0][:160]))
    return planned, failed


def run_both(repo: str, base: str):
    """The offline sample under upstream's engine and ours; (alias, verdict) per script."""
    cm = os.path.join(os.path.dirname(sys.executable), "cm")
    home = os.path.join(base, "cm-home")
    env = dict(os.environ, CM_REPOS=home, CM_INDEX="no",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("CM4MLPERF_CACHE_DIR", None)
    subprocess.run([cm, "add", "repo", f"--path={repo}"], env=env, capture_output=True, check=True)
    git = os.path.join(base, "gitsrc")
    os.makedirs(git, exist_ok=True)
    g = ["git", "-C", git, "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", git, "init", "-q"], check=True)
    open(os.path.join(git, "README"), "w").write("x\n")
    subprocess.run(g + ["add", "README"], check=True)
    subprocess.run(g + ["commit", "-qm", "x"], check=True)
    out = []
    seen = set()
    for alias, tags, inputs in OFFLINE:
        if (alias, tags) in seen:
            continue
        seen.add((alias, tags))
        tmp = tempfile.mkdtemp(dir=base)
        tags = tags.replace("{git}", git)
        inputs = {k: v.replace("{tmp}", tmp) for k, v in inputs.items()}
        cmd = [cm, "run", "script", alias, "--quiet", "--out=json"] + (
            [f"--tags={tags}"] if tags else []) + [f"--{k}={v}" for k, v in inputs.items()]
        up = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp,
                            stdin=subprocess.DEVNULL, timeout=900)
        theirs = _json(up.stdout) if up.returncode == 0 else None
        ours_env = dict(env, CM4MLPERF_CACHE_DIR=os.path.join(base, "our-cache"))
        code = ("import sys, json; sys.path.insert(0, sys.argv[1]); from cmengine import cli; "
                "from cmengine.registry import Registry, Repo; import io; "
                "s = cli.Session([Repo('cm4mlops', sys.argv[2])], out=io.StringIO()); "
                "s.registry = Registry([Repo('cm4mlops', sys.argv[2])]); "
                "i = json.loads(sys.argv[3]); sys.stdout, real = sys.stderr, sys.stdout; "
                "r = cli.guarded(lambda: s.run(i)); sys.stdout = real; "
                "print(json.dumps({k: r.get(k) for k in ('return', 'error', 'new_env', 'new_state')}, default=str))")
        i = {"action": "run", "artifact": alias, "quiet": True, "tags": tags, "env": {}}
        for k, v in inputs.items():
            if k.startswith("env."):
                i["env"][k[4:]] = v
            else:
                i[k] = v
        ours_p = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "automation"), repo,
                                 json.dumps(i)], env=ours_env, capture_output=True, text=True,
                                cwd=tmp, stdin=subprocess.DEVNULL, timeout=900)
        ours = _json(ours_p.stdout)
        if theirs is None:
            verdict = "upstream's engine fails here: " + _last(up.stdout + up.stderr)
        elif not ours or ours.get("return"):
            verdict = "ours fails: " + ((ours or {}).get("error") or _last(ours_p.stderr)).splitlines()[0][:160]
        else:
            cache_roots = (home, os.path.join(base, "our-cache"))
            a = _strip(ours["new_env"], cache_roots)
            b = _strip(theirs.get("new_env", {}), cache_roots)
            if a == b and ours["new_state"] == theirs.get("new_state", {}):
                verdict = "same"
            else:
                diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                verdict = "differs in " + ", ".join(diff[:6]) + (
                    "" if ours["new_state"] == theirs.get("new_state", {}) else " (and state)")
        out.append((alias + (" " + tags if tags and "{" not in tags and "/" not in tags else ""),
                    verdict))
    return out


def _json(text: str):
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("{")]
    for s in starts:
        try:
            return json.loads("\n".join(lines[s:]))
        except ValueError:
            continue
    return None


def _last(text: str) -> str:
    """The line that says what went wrong (an error line if there is one, else the last)."""
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    errors = [x for x in lines if "error" in x.lower() or "could not" in x.lower()
              or "unable to" in x.lower()]
    return (errors or lines or ["(no output)"])[-1][:160]


def _strip(env: dict, roots) -> dict:
    """Paths inside each engine's own cache differ by design; compare what is outside it."""
    return {k: ("<cache>" if any(str(v).startswith(r) for r in roots) else v) for k, v in env.items()
            if "MHZ" not in k and "BOGOMIPS" not in k}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help="also run the offline sample under both engines")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="cm4mlops-coverage-")
    try:
        repo = os.path.join(base, "cm4mlops")
        shutil.copytree(UPSTREAM, repo, symlinks=True)
        loaded, load_failed = measure_load(repo)
        planned, plan_failed = measure_plan(repo, loaded, os.path.join(base, "plan-cache"))
        cats = sorted({category(m) for m in loaded} | {c for _, c, _ in load_failed})
        by = collections.defaultdict(lambda: [0, 0, 0])
        for m in loaded:
            by[category(m)][1] += 1
        for _, c, _ in load_failed:
            by[c][0] += 0
        for m in planned:
            by[category(m)][2] += 1
        total = {c: by[c][1] + sum(1 for _, cc, _ in load_failed if cc == c) for c in cats}
        results = run_both(repo, base) if args.run else []
        cat_of = {m.alias: category(m) for m in loaded}
        ran = collections.defaultdict(lambda: [0, 0, 0])   # tried, same, upstream fails
        for name, verdict in results:
            r = ran[cat_of.get(name.split()[0], "(none)")]
            r[0] += 1
            r[1] += verdict == "same"
            r[2] += verdict.startswith("upstream's engine fails")
        extra = " offline tried | same as upstream | upstream fails |" if args.run else ""
        print("| category | manifests | load | plan |" + extra)
        print("|---|---:|---:|---:|" + ("---:|---:|---:|" if args.run else ""))
        for c in cats:
            cols = f" {ran[c][0]} | {ran[c][1]} | {ran[c][2]} |" if args.run and ran[c][0] else (
                " | | |" if args.run else "")
            print(f"| {c} | {total[c]} | {by[c][1]} | {by[c][2]} |" + cols)
        tot = [sum(r[i] for r in ran.values()) for i in range(3)]
        print(f"| **all** | **{sum(total.values())}** | **{len(loaded)}** | **{len(planned)}** |"
              + (f" **{tot[0]}** | **{tot[1]}** | **{tot[2]}** |" if args.run else ""))
        print("\nManifests that do not load:")
        for name, c, why in load_failed:
            print(f"- `{name}` ({c}): {why.split(': ', 1)[-1] if ': ' in why else why}")
        print("\nScripts that load but do not plan:")
        reasons = collections.Counter()
        for name, c, why in plan_failed:
            print(f"- `{name}` ({c}): {why}")
            reasons[why.split(":")[0][:60]] += 1
        if args.run:
            print("\nOffline sample under both engines (new_env and state compared):")
            for name, verdict in results:
                print(f"- `{name}`: {verdict}")
            same = sum(1 for _, v in results if v == "same")
            print(f"\n{same} of {len(results)} offline scripts give the same env and state")
            for side, prefix in (("ours", "ours fails"), ("upstream's engine", "upstream's engine fails")):
                if results and all(v.startswith(prefix) for _, v in results):   # a whole side crashed
                    print(f"cm4mlops_coverage: FAILED, no comparison: {side} failed on every offline script "
                          f"(first: {results[0][1]})", file=sys.stderr)
                    return 1
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
