"""Harness overhead: our asyncio SUT vs the reference SUT_API.py design, same stand-in, one run.

    python benchmarks/harness_overhead.py [--quick]

Measures, against one zero-latency stand-in process (streaming, token ids):
  1. the stand-in's ceiling: a bare closed-loop aiohttp load generator (no LoadGen), req/s;
  2. the highest Server QPS each SUT sustains under LoadGen (Poisson arrivals): a trial passes
     when completed/scheduled >= 0.95 and p99 TTFT < 100 ms (a zero-latency server queues
     nothing unless the client falls behind); doubling, then bisection;
  3. p99 TTFT each SUT adds at 100 QPS: LoadGen's p99 TTFT minus a bare open-loop client's
     p99 TTFT at the same rate.
The reference design (re-implemented here from its description, not copied): a queue, worker
threads that start one thread per query, `requests` with stream=True, a first-token thread.
Every LoadGen trial runs in its own process (one test per process).
Targets (issue 6): >= 3x the reference's QPS, >= 80% of the ceiling, < 1 ms added p99 TTFT.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "automation"), str(ROOT / "tests" / "fixtures" / "vllm")]   # the library; the stand-in

from standin import StandinConfig, StandinProcess  # noqa: E402
from standin.dataset import write_dataset  # noqa: E402

MODEL = "standin-model"
OUTPUT_TOKENS = 8


# ---------------------------------------------------------------- the reference design
class ReferenceDesignSUT:
    """Thread per query + requests streaming + a first-token thread (SUT_API.py's SUTServer design)."""

    def __init__(self, lg, tok_input, url, workers=1):
        import requests
        self.requests, self.lg, self.tok_input, self.url = requests, lg, tok_input, url
        self.q: queue.Queue = queue.Queue()
        self.first_q: queue.Queue = queue.Queue()
        self.workers = [threading.Thread(target=self._worker, daemon=True) for _ in range(workers)]
        self.ft = threading.Thread(target=self._first_tokens, daemon=True)

    def start(self):
        for w in self.workers:
            w.start()
        self.ft.start()

    def stop(self):
        for _ in self.workers:
            self.q.put(None)
        self.first_q.put(None)

    def issue_queries(self, samples):
        self.q.put(samples[0])

    def flush_queries(self):
        pass

    def _worker(self):
        while (s := self.q.get()) is not None:
            threading.Thread(target=self._one, args=(s.id, s.index), daemon=True).start()

    def _first_tokens(self):
        while (item := self.first_q.get()) is not None:
            tok, qid = item
            buf = array.array("i", [tok])
            p, n = buf.buffer_info()
            self.lg.FirstTokenComplete([self.lg.QuerySampleResponse(qid, p, n * 4)])

    def _one(self, qid, idx):
        body = {"model": MODEL, "prompt": self.tok_input[idx], "max_tokens": 1024, "temperature": 0,
                "stream": True, "return_token_ids": True}
        toks, first = [], True
        s = self.requests.Session()
        with s.post(f"{self.url}/v1/completions", json=body, stream=True) as r:
            for line in r.iter_lines():
                if not line or not line.startswith(b"data") or b"[DONE]" in line:
                    continue
                ids = json.loads(line[6:])["choices"][0]["token_ids"]
                if first and ids:
                    self.first_q.put((ids[0], qid))
                    first = False
                toks.extend(ids)
        s.close()
        buf = array.array("i", toks)
        p, n = buf.buffer_info()
        self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(qid, p, n * 4, n)])


class NoopSUT:
    """Answers at once inside issue_queries, without a server: LoadGen's own cost per query."""

    def __init__(self, lg):
        self.lg = lg
        self.tok = array.array("i", [5, 6, 7, 8, 9, 10, 11, 2])

    def start(self):
        pass

    def stop(self):
        pass

    def issue_queries(self, samples):
        p, n = self.tok.buffer_info()
        for s in samples:
            self.lg.FirstTokenComplete([self.lg.QuerySampleResponse(s.id, p, 4)])
            self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(s.id, p, n * 4, n)])

    def flush_queries(self):
        pass


# ---------------------------------------------------------------- one LoadGen trial (child process)
def trial(impl: str, url: str, qps: float, duration_s: float, dataset: str, out: str) -> dict:
    import mlperf_loadgen as lg
    from mlperf_llm.harness.client import ApiClient, GenerationParams
    from mlperf_llm.harness.progress import Stats
    from mlperf_llm.harness.qsl import load_dataset
    from mlperf_llm.harness.responder import Responder
    from mlperf_llm.harness.results import read_summary
    from mlperf_llm.harness.serverwatch import ServerWatch
    from mlperf_llm.harness.sut_api import ApiSUT, ApiSutConfig

    ds = load_dataset(dataset)
    os.makedirs(out, exist_ok=True)
    conf = Path(out) / "user.conf"
    conf.write_text(f"llama2-70b.Server.target_qps = {qps}\nllama2-70b.Server.min_duration = {int(duration_s * 1000)}\n"
                    f"llama2-70b.Server.min_query_count = 1\nllama2-70b.*.performance_sample_count_override = {ds.count}\n")
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Server
    settings.FromConfig(str(conf), "llama2-70b", "Server")
    settings.mode = lg.TestMode.PerformanceOnly
    if impl == "ours":
        sut = ApiSUT(ds, ApiSutConfig(streaming=True), lambda: ApiClient([url], MODEL, GenerationParams()),
                     Responder(lg, Stats()), ServerWatch((), "Server performance"))
    elif impl == "noop":
        sut = NoopSUT(lg)
    else:
        sut = ReferenceDesignSUT(lg, ds.tok_input, url)
    sut.start()
    lsut = lg.ConstructSUT(sut.issue_queries, sut.flush_queries)
    qsl = lg.ConstructQSL(ds.count, ds.count, ds.load_samples, ds.unload_samples)
    lo = lg.LogOutputSettings()
    lo.outdir = out
    ls = lg.LogSettings()
    ls.log_output = lo
    ls.enable_trace = False
    cwd = os.getcwd()
    os.chdir(out)
    cpu0 = time.process_time()          # all threads of this process: LoadGen, SUT, client
    lg.StartTestWithLogSettings(lsut, qsl, settings, ls, str(Path(out) / "audit.config"))
    cpu = time.process_time() - cpu0
    os.chdir(cwd)
    sut.stop()
    s = read_summary(Path(out))
    text = (Path(out) / "mlperf_log_summary.txt").read_text()
    sched = float(text.split("Scheduled samples per second :")[1].split()[0])
    return {"impl": impl, "target": qps, "completed_qps": s.samples_per_second, "scheduled_qps": sched,
            "ttft_p99_ms": (s.ttft_p99_ns or 0) / 1e6,
            "cpu_ms_per_query": 1000 * cpu / max(1, round((s.samples_per_second or 0) * duration_s))}


class TrialCrashed(RuntimeError):
    """A trial's process died or printed no result: the benchmark has no number for that side."""


def _reason(text: str) -> str:
    """The last lines of a crashed trial's output (the exception, as Python prints it)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n    ".join(lines[-4:]) if lines else "(no output)"


def run_trial(impl, url, qps, duration_s, dataset) -> dict:
    timeout = duration_s * 10 + 60
    with tempfile.TemporaryDirectory(prefix="hbench-") as out:
        try:
            p = subprocess.run([sys.executable, __file__, "--trial", impl, "--url", url, "--qps", str(qps),
                                "--duration", str(duration_s), "--dataset", dataset, "--out", out],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TrialCrashed(f"the {impl} trial at {qps:g} QPS did not finish in {timeout:g} s") from None
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not lines:
            raise TrialCrashed(f"the {impl} trial at {qps:g} QPS crashed (exit code {p.returncode}):\n    "
                               + _reason(p.stderr or p.stdout))
        return json.loads(lines[-1])


def missing_modules() -> list[str]:
    """What a trial or the bare load generators import that this interpreter lacks, with the fix."""
    import importlib.util
    needs = {"mlperf_loadgen": "mlcommons-loadgen", "requests": "requests", "aiohttp": "aiohttp"}
    return [f"{mod} (pip install {pkg})" for mod, pkg in needs.items() if importlib.util.find_spec(mod) is None]


def passes(r: dict) -> bool:
    # a negative TTFT means FirstTokenComplete came after QuerySamplesComplete (the reference design's
    # first-token thread can lose that race): LoadGen's latencies are then garbage, so it does not pass
    return r["completed_qps"] >= 0.95 * r["scheduled_qps"] and 0.0 <= r["ttft_p99_ms"] < 100.0


def max_sustained(impl, url, duration_s, dataset, start=100.0, cap=6400.0, bisect_steps=3) -> tuple[float, list]:
    trials, good, bad, q = [], 0.0, None, start
    while q <= cap:
        r = run_trial(impl, url, q, duration_s, dataset)
        trials.append(r)
        print(f"  {impl:<9} target {q:7.0f}  completed {r['completed_qps']:8.1f}/s  p99 TTFT "
              f"{r['ttft_p99_ms']:8.2f} ms  {'ok' if passes(r) else 'FAIL'}", flush=True)
        if not passes(r):
            bad = q
            break
        good, q = q, q * 2
    for _ in range(bisect_steps if bad else 0):
        mid = (good + bad) / 2
        r = run_trial(impl, url, mid, duration_s, dataset)
        trials.append(r)
        print(f"  {impl:<9} target {mid:7.0f}  completed {r['completed_qps']:8.1f}/s  p99 TTFT "
              f"{r['ttft_p99_ms']:8.2f} ms  {'ok' if passes(r) else 'FAIL'}", flush=True)
        good, bad = (mid, bad) if passes(r) else (good, mid)
    return good, trials


# ---------------------------------------------------------------- bare load generators (no LoadGen)
async def _stream_once(session, url, prompt) -> float | None:
    t0 = time.perf_counter()
    ttft = None
    async with session.post(f"{url}/v1/completions", json={"model": MODEL, "prompt": prompt, "max_tokens": 1024,
                                                           "temperature": 0, "stream": True,
                                                           "return_token_ids": True}) as r:
        async for line in r.content:
            if ttft is None and line.startswith(b"data: {"):
                ttft = time.perf_counter() - t0
    return ttft


def _run_fast(coro):
    """The bare generators get the fastest loop we have (uvloop when installed), like our SUT."""
    try:
        import uvloop
        return uvloop.run(coro)
    except ImportError:
        return asyncio.run(coro)


def _proc_cpu_s(pid: int) -> float:
    """user+system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bare_ceiling(url, prompts, seconds=5.0, concurrency=64) -> tuple[float, int]:
    import aiohttp
    done = 0
    stop = time.perf_counter() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:
        async def loop(k):
            nonlocal done
            i = k
            while time.perf_counter() < stop:
                await _stream_once(s, url, prompts[i % len(prompts)])
                done += 1
                i += concurrency
        t0 = time.perf_counter()
        await asyncio.gather(*(loop(k) for k in range(concurrency)))
        return done / (time.perf_counter() - t0), done


async def bare_ttft_p99(url, prompts, qps=100.0, seconds=5.0) -> float:
    import aiohttp
    rng = random.Random(1)
    ttfts: list[float] = []
    async with aiohttp.ClientSession() as s:
        tasks, t = [], time.perf_counter()
        end = t + seconds
        i = 0
        while t < end:
            t += rng.expovariate(qps)
            await asyncio.sleep(max(0.0, t - time.perf_counter()))
            tasks.append(asyncio.ensure_future(_stream_once(s, url, prompts[i % len(prompts)])))
            i += 1
        ttfts = sorted(x for x in await asyncio.gather(*tasks) if x is not None)
    return ttfts[int(0.99 * (len(ttfts) - 1))] * 1000


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trial")
    p.add_argument("--url")
    p.add_argument("--qps", type=float)
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--dataset")
    p.add_argument("--out")
    p.add_argument("--quick", action="store_true", help="2 s trials, fewer bisection steps")
    a = p.parse_args()
    if a.trial:
        print(json.dumps(trial(a.trial, a.url, a.qps, a.duration, a.dataset, a.out)))
        return 0
    missing = missing_modules()
    if missing:
        print(f"harness_overhead: cannot measure: {sys.executable} lacks {', '.join(missing)}; every "
              "LoadGen trial of both sides would crash. Run it with a python that has them, e.g. after "
              "pip install '.[test]' (it brings mlcommons-loadgen)", file=sys.stderr)
        return 2
    try:
        return measure(a)
    except TrialCrashed as e:
        print(f"\nharness_overhead: FAILED, no result: {e}", file=sys.stderr)
        return 1


def measure(a) -> int:
    dur = 2.0 if a.quick else a.duration
    with tempfile.TemporaryDirectory(prefix="hbench-") as tmp:
        dataset = write_dataset(os.path.join(tmp, "ds.pkl"), 256)
        from mlperf_llm.harness.qsl import load_dataset
        prompts = load_dataset(dataset).tok_input
        with StandinProcess(StandinConfig(model_name=MODEL, output_tokens=OUTPUT_TOKENS)) as sp:
            print(f"stand-in {sp.url}: zero latency, {OUTPUT_TOKENS} streamed tokens per query; {os.cpu_count()} cores")
            c0 = _proc_cpu_s(sp.proc.pid)
            ceiling, n_bare = _run_fast(bare_ceiling(sp.url, prompts, seconds=dur + 1))
            if not n_bare:
                raise TrialCrashed(f"the bare load generator completed no request against the stand-in at {sp.url}")
            standin_ms = 1000 * (_proc_cpu_s(sp.proc.pid) - c0) / n_bare
            print(f"stand-in ceiling (bare aiohttp closed loop, 64 in flight): {ceiling:,.0f} req/s; "
                  f"stand-in CPU {standin_ms:.3f} ms per request", flush=True)
            steps = 2 if a.quick else 3
            ours, _ = max_sustained("ours", sp.url, dur, dataset, bisect_steps=steps)
            ref, _ = max_sustained("reference", sp.url, dur, dataset, bisect_steps=steps)
            # p99 TTFT at 100 QPS: bare, ours, reference interleaved, `reps` times; medians
            reps, secs = (1, dur + 1) if a.quick else (3, 10.0)
            samples: dict[str, list[float]] = {"bare": [], "ours": [], "reference": []}
            cpu: dict[str, list[float]] = {"ours": [], "reference": []}
            for _ in range(reps):
                samples["bare"].append(_run_fast(bare_ttft_p99(sp.url, prompts, 100.0, seconds=secs)))
                for impl in ("ours", "reference"):
                    r = run_trial(impl, sp.url, 100.0, secs, dataset)
                    samples[impl].append(r["ttft_p99_ms"])
                    cpu[impl].append(r.get("cpu_ms_per_query", float("nan")))
                print("  p99 TTFT at 100 QPS (ms): " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in samples.items()),
                      flush=True)
    med = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
    bare_p99 = med["bare"]
    at100 = {k: {"ttft_p99_ms": med[k]} for k in ("ours", "reference")}
    add = {k: v["ttft_p99_ms"] - bare_p99 for k, v in at100.items()}
    print(f"\nresults (side by side; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    ratio_text = (f"ratio {ours / ref:5.2f}x" if ours and ref else
                  "no ratio: " + " and ".join(f"{k} sustained none of the rates tried (lowest 100 QPS)"
                                              for k, v in (("ours", ours), ("reference", ref)) if not v))
    print(f"  max sustained Server QPS  ours {ours:8.0f}   reference {ref:8.0f}   {ratio_text} (target >= 3x)")
    print(f"  share of stand-in ceiling ours {ours / ceiling:8.0%}   reference {ref / ceiling:8.0%}   "
          f"(ceiling {ceiling:,.0f} req/s; target >= 80%)")
    print(f"  p99 TTFT at 100 QPS       ours {at100['ours']['ttft_p99_ms']:8.3f}   reference "
          f"{at100['reference']['ttft_p99_ms']:8.3f} ms   (bare {bare_p99:.3f} ms)")
    print(f"  p99 TTFT added            ours {add['ours']:8.3f}   reference {add['reference']:8.3f} ms   "
          "(target ours < 1 ms)")
    cmed = {k: sorted(v)[len(v) // 2] for k, v in cpu.items()}
    print(f"  client CPU per query      ours {cmed['ours']:8.3f}   reference {cmed['reference']:8.3f} ms   "
          f"ratio {cmed['reference'] / max(cmed['ours'], 1e-9):5.2f}x (LoadGen included; stand-in: "
          f"{standin_ms:.3f} ms per request)")
    print(f"  one-core QPS bound        ours {1000 / cmed['ours']:8.0f}   reference {1000 / cmed['reference']:8.0f}   "
          f"stand-in {1000 / max(standin_ms, 1e-9):8.0f}   (1 / CPU per query: robust to other load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
