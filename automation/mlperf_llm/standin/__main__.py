"""python -m mlperf_llm.standin [--port 0] [--model-name X] ...: serve until killed.

Prints `STANDIN_URL=http://127.0.0.1:PORT` on stdout once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from .server import StandinConfig, serve


def parse_args(argv: list[str] | None = None) -> tuple[StandinConfig, int]:
    p = argparse.ArgumentParser(prog="python -m mlperf_llm.standin", description=__doc__)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--model-name", default="standin-model")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--output-tokens", type=int, default=16)
    p.add_argument("--ttft-ms", type=float, default=0.0)
    p.add_argument("--tpot-ms", type=float, default=0.0)
    p.add_argument("--error-every", type=int, default=0)
    p.add_argument("--die-after", type=int, default=0)
    p.add_argument("--tokenizer-offset", type=int, default=3)
    p.add_argument("--responses", help="JSON file: {prompt_key: [token ids]}")
    a = p.parse_args(argv)
    responses = {}
    if a.responses:
        with open(a.responses, encoding="utf-8") as f:
            responses = json.load(f)
    cfg = StandinConfig(model_name=a.model_name, max_model_len=a.max_model_len, output_tokens=a.output_tokens,
                        ttft_ms=a.ttft_ms, tpot_ms=a.tpot_ms, error_every=a.error_every,
                        die_after=a.die_after, tokenizer_offset=a.tokenizer_offset, responses=responses)
    return cfg, a.port


async def _main(cfg: StandinConfig, port: int) -> None:
    runner, url = await serve(cfg, port=port)
    print(f"STANDIN_URL={url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    cfg, port = parse_args(argv)
    try:
        try:
            import uvloop
            uvloop.run(_main(cfg, port))
        except ImportError:
            asyncio.run(_main(cfg, port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
