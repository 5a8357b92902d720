"""Replicas side by side in one run (issues 28, 37): Offline tokens/s of two vLLM replicas, each pinned
to a CPU group of its own (vllm/replicas.py), against what `--replicas=2` replaces: the default single
server (service.start_from_env, tuned for this machine, on all of its cores), each side the same
Offline test (the same queries, timed by LoadGen over the same span: its first query to its last
answer); then a skewed pair (the second replica made slow: max_num_seqs=1, one sequence at a time),
least-outstanding (with a window) against round-robin. Prints both ratios and where the time went:
each replica's CPU seconds and the harness's own (it shares the machine's cores with the servers).

Run from the repository root with the embedded model and a python that has vLLM (the e2e tests'
variables, or the paths of a cached run):
    CM_EMBEDDED_MODEL_PATH=... CM_VLLM_PYTHON=... python benchmarks/replicas.py [--queries 48]
Goals (issue 28): two replicas over one >= 1.5x; least-outstanding over round-robin >= 1.2x in the
skewed case. A side that fails is named and no ratio is printed for it (exit 1).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import embedded_server  # noqa: E402  (beside this file; puts automation/ on the path)
from mlperf_llm.harness.driver import HarnessRequest, run_all  # noqa: E402
from mlperf_llm.harness.results import HarnessStatus  # noqa: E402
from mlperf_llm.vllm import replicas, server, service, tuning  # noqa: E402

NAME = embedded_server.NAME
SINGLE = "one server (the default, every core)"


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def offline(urls: list[str], dataset: str, queries: int, work: Path, balance: str, window: int | None,
            pgids: list[int]) -> dict:
    """One Offline performance test (test mode) over urls: tokens/s, shares, and CPU seconds."""
    req = HarnessRequest(model="llama2-70b-99", round="6.0", results_dir=str(work), dataset_path=dataset,
                         scenarios=("Offline",), modes=("performance",), api_servers=tuple(urls),
                         api_model_name=NAME, total_sample_count=queries, test_query_count=queries,
                         balance=balance, endpoint_window=window, max_tokens=128, progress=False,
                         skip_tokenizer_check=True)
    cpu0 = [server.group_cpu_seconds(g) for g in pgids]
    client0, t0 = children_cpu_s(), time.monotonic()
    (out,) = run_all(req)
    wall = time.monotonic() - t0
    if out.verdict == "FAILED":
        raise RuntimeError(f"Offline over {urls} ({balance}) failed: {'; '.join(out.reasons)}")
    status = HarnessStatus.read(Path(out.directory))
    tps = out.summary.get("tokens_per_second")          # LoadGen's figure
    if not tps:
        raise RuntimeError(f"Offline over {urls} ({balance}): LoadGen reported no tokens per second "
                           f"({out.directory})")
    return {"tokens_per_s": tps, "wall_s": wall,
            "shares": status.endpoints, "client_cpu_s": children_cpu_s() - client0,
            "server_cpu_s": [server.group_cpu_seconds(g) - c for g, c in zip(pgids, cpu0)]}


def start(env: dict, work: Path, placements, machine, which: list[int], overrides: list[dict]) -> list[dict]:
    started = []
    try:
        for i, extra in zip(which, overrides):
            started.append(service.start_placed({**env, **extra}, work, placements[i], placements, machine,
                                                log=lambda m, i=i: print(f"  [replica {i + 1}] {m}")
                                                if "ready" in m or "starting" in m else None))
    except BaseException:
        for s in started:
            service.stop_from_env({**env, **s})
        raise
    return started


def say(label: str, r: dict) -> None:
    shares = ", ".join(f"{u.rsplit(':', 1)[1]}: {n}" for u, n in r["shares"].items())
    servers = ", ".join(f"{c:.0f}" for c in r["server_cpu_s"])
    print(f"  {label:44s} {r['tokens_per_s']:8.1f} tok/s  {r['wall_s']:6.1f} s  shares {shares}; CPU s: "
          f"servers {servers}, harness {r['client_cpu_s']:.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=48)
    a, work, dataset = embedded_server.parse(ap, "replicas-bench-")
    machine = tuning.detect_machine()
    placements = replicas.place(machine, 2)
    print(f"{len(machine.cpus)} CPU(s); " + "; ".join(p.describe() for p in placements))
    env = embedded_server.server_env(a, work, concurrency=16)
    results, failed = {}, []
    print("baseline: the default single server on every core (what --replicas=2 replaces)")
    single = service.start_from_env(dict(env), work / "single", log=lambda m: print(f"  [single] {m}")
                                    if "ready" in m or "starting" in m else None)
    try:
        results[SINGLE] = offline([single["CM_VLLM_SERVER_URL"]], dataset, a.queries, work / "single" / "run", "least",
                                  None, [int(single["CM_VLLM_SERVER_PID"])])
        say(SINGLE, results[SINGLE])
    except Exception as e:             # a crashed side is named, never a ratio of zeros
        failed.append(f"{SINGLE}: {e}")
        print(f"  {SINGLE}: FAILED: {e}")
    finally:
        service.stop_from_env({**env, **single}, log=lambda m: None)
    for case, overrides in (("even", [{}, {}]), ("skewed", [{}, {"CM_VLLM_MAX_NUM_SEQS": "1"}])):
        print(f"{case}: starting two replicas" + (" (the second with max_num_seqs=1)" if case == "skewed" else ""))
        started = start(env, work / case, placements, machine, [0, 1], overrides)
        urls = [s["CM_VLLM_SERVER_URL"] for s in started]
        pgids = [int(s["CM_VLLM_SERVER_PID"]) for s in started]
        window = int(started[0]["CM_VLLM_SERVER_MAX_NUM_SEQS"])
        runs = ([("two replicas, least outstanding", urls, "least", window)] if case == "even" else
                [("skewed, round-robin", urls, "round-robin", None),
                 (f"skewed, least outstanding (window {window})", urls, "least", window)])
        try:
            for label, use, balance, win in runs:
                try:
                    results[label] = offline(use, dataset, a.queries, work / case / label.replace(" ", "_"),
                                             balance, win, pgids)
                    say(label, results[label])
                except Exception as e:     # a crashed side is named, never a ratio of zeros
                    failed.append(f"{label}: {e}")
                    print(f"  {label}: FAILED: {e}")
        finally:
            for s in started:
                service.stop_from_env({**env, **s}, log=lambda m: None)
    for name, top, bottom, goal in (("two replicas / the default single server", "two replicas, least outstanding",
                                     SINGLE, 1.5),
                                    ("least outstanding / round-robin (skewed)",
                                     next((k for k in results if k.startswith("skewed, least")), ""),
                                     "skewed, round-robin", 1.2)):
        if top in results and bottom in results:
            ratio = results[top]["tokens_per_s"] / results[bottom]["tokens_per_s"]
            print(f"{name}: {ratio:.2f}x (goal >= {goal}x)")
        else:
            print(f"{name}: no ratio (a side failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
