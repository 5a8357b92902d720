"""Offline tokens/s of vLLM served from the pinned image against the same vLLM served on the host
(issue 40's goal: container / host >= 0.97).

Run with the host vLLM venv's python (the one the image's `vllm` venv was locked from), from the
repository root, after `cm run script --tags=build,mlperf,image --vllm_python=THAT_PYTHON`:
    VLLM_PY benchmarks/container_overhead.py --facts cm4mlperf-image.json --model DIR [--store DIR]
Both sides get the same server command (service.prepare: tuned once for this machine), the same
environment additions, prompts and lengths: N requests x T tokens at once, greedy, fixed length,
as an Offline test sends them. The sides alternate (host, image, host, image, ...), each round
timed over the same span (the batch); the best and the median round of each side are compared. The image side is
what `--docker` runs (containers/served.py): the image's vLLM venv in a container with no network,
on a Unix socket behind the host's relay on 127.0.0.1, the model mounted read-only at the same path.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'automation'))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mlperf_llm.containers import engine as engines, served  # noqa: E402
from mlperf_llm.vllm import server, service  # noqa: E402
from mlperf_llm.vllm.loadtest import run_completions  # noqa: E402
from vllm_throughput import NAME, make_prompts  # noqa: E402


def ready(url: str, proc, timeout_s: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if proc.returncode() is not None:
            raise SystemExit(f'the server exited ({proc.returncode()}):\n{server.log_tail(proc.record.log_path)}')
        if server.probe(url, NAME) is None:
            return
        time.sleep(1)
    raise SystemExit(f'not ready after {timeout_s:.0f} s:\n{server.log_tail(proc.record.log_path)}')


def one_round(side: str, argv, added, cfg, prompts, tokens, work: Path, eng, tag) -> float:
    log = work / f'{side}-{time.monotonic_ns()}.log'
    if side == 'host':
        proc = server.start(argv, host=cfg.host, port=cfg.port, model_name=NAME, log_path=log,
                            env={**os.environ, **added})
    else:
        proc = served.launcher(eng, tag, host=cfg.host, port=cfg.port, model_name=NAME)(argv, added, log)
    try:
        ready(proc.url, proc, 900)
        run_completions(proc.url, NAME, prompts[:4], 4)                     # warm-up
        res = run_completions(proc.url, NAME, prompts, tokens)
        assert res.output_tokens == len(prompts) * tokens, res.output_tokens
        return res.tokens_per_s
    finally:
        print(f'  {side}: {proc.stop()}', flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--facts', required=True, help="the image's cm4mlperf-image.json (build-mlperf-image)")
    ap.add_argument('--model', required=True, help='the model folder (Hugging Face layout)')
    ap.add_argument('--store', default='', help='the private podman store the image was built in (--store)')
    ap.add_argument('--requests', type=int, default=32)
    ap.add_argument('--tokens', type=int, default=64)
    ap.add_argument('--rounds', type=int, default=3, help='rounds per side, alternating')
    ap.add_argument('--port', type=int, default=8393)
    a = ap.parse_args(argv)
    facts = json.loads(Path(a.facts).read_text())
    if 'vllm' not in {v['name'] for v in facts['recipe']['venvs']}:
        raise SystemExit(f'{a.facts}: the image has no vllm venv (build it with --vllm_python)')
    eng = engines.find('podman')
    work = Path(tempfile.mkdtemp(prefix='container-overhead-'))
    eng = engines.configured(eng, str(work))
    if a.store:
        eng = eng.with_store(a.store)
    model = os.path.abspath(a.model)
    from transformers import AutoTokenizer
    prompts = make_prompts(AutoTokenizer.from_pretrained(model), a.requests)
    env = {'CM_VLLM_MODEL': model, 'CM_VLLM_SERVED_MODEL_NAME': NAME, 'CM_VLLM_PYTHON': sys.executable,
           'CM_VLLM_PORT': str(a.port), 'CM_VLLM_HOST': '127.0.0.1', 'CM_VLLM_ENFORCE_EAGER': 'yes',
           'CM_VLLM_EXPECTED_CONCURRENCY': str(a.requests), 'CM_VLLM_MAX_MODEL_LEN': '2048'}
    argv_, added, cfg = service.prepare(env)
    print(f"image {facts['image_id'][:19]} ({facts['engine']}); workload {a.requests} x {a.tokens} tokens; "
          f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    rates = {'host': [], 'image': []}
    for r in range(a.rounds):
        for side in ('host', 'image'):
            rate = one_round(side, argv_, added, cfg, prompts, a.tokens, work, eng, facts['tag'])
            rates[side].append(rate)
            print(f'round {r + 1} {side:5s}: {rate:7.1f} tokens/s', flush=True)
    host, image = max(rates['host']), max(rates['image'])
    mid_host, mid_image = statistics.median(rates['host']), statistics.median(rates['image'])
    print(f'best: host {host:.1f}, image {image:.1f} tokens/s; image / host = {image / host:.3f} (goal >= 0.97)\n'
          f'median: host {mid_host:.1f}, image {mid_image:.1f} tokens/s; image / host = {mid_image / mid_host:.3f}; '
          f'load average after: {os.getloadavg()[0]:.1f}')


if __name__ == '__main__':
    main()
