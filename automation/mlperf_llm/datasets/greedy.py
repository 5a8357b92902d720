"""Greedy reference answers for an embedded data set, the loop both embedded sets share
(embedded_reference: OpenOrca layout; cnndm_reference: summarisation).

Each prompt's token ids (as the benchmark's SUT sends them) are decoded greedily, min_new_tokens
and max_new_tokens as the benchmark's, in batches of similar-length prompts, left-padded with EOS
and masked out (far fewer forward passes than batch size 1 on a CPU); each answer is cut after its
first EOS, which it keeps. The model sits behind a plain function (`Generator.generate_batch`), so
the loop runs without torch in tests; `transformers_generator` is that function for a Hugging Face
checkpoint (needs torch and transformers).
"""
from __future__ import annotations

import datetime as _dt
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..files import sha256_file

# (left-padded prompt ids, attention masks) -> each row's new token ids, greedy, at most max_new_tokens
BatchGenerator = Callable[[list[list[int]], list[list[int]]], list[list[int]]]
BACKEND = ("transformers AutoModelForCausalLM.generate, token-id prompts sorted by length, batch size {}, "
           "left padding with EOS masked out")


@dataclass(frozen=True)
class Settings:
    max_new_tokens: int
    min_new_tokens: int = 1
    batch_size: int = 16
    threads: int = 1            # one intra-op thread: on a shared 2-core box two threads mostly spin-wait
    dtype: str = "float32"

    def record(self, eos_token_id) -> dict:
        """The settings as reference.json records them."""
        return {"do_sample": False, "max_new_tokens": self.max_new_tokens, "min_new_tokens": self.min_new_tokens,
                "batch_size": self.batch_size, "torch_threads": self.threads, "dtype": self.dtype,
                "device": "cpu", "eos_token_id": eos_token_id}


@dataclass(frozen=True)
class Prompt:
    id: str
    tok_input: Sequence[int]


@dataclass(frozen=True)
class Generator:
    generate_batch: BatchGenerator
    eos: int                    # pads the prompts; an answer ends after it
    versions: dict              # the libraries that generated, for the provenance


def greedy_answers(prompts: Sequence[Prompt], gen: Generator, decode: Callable[[list[int]], str],
                   batch_size: int) -> list[dict]:
    """One answer per prompt, in the prompts' order: {"id", "n_tokens", "token_ids", "text"}."""
    answers, t0, total = {}, time.time(), 0
    order = sorted(range(len(prompts)), key=lambda k: len(prompts[k].tok_input))
    for b in range(0, len(order), batch_size):
        batch = [prompts[k] for k in order[b:b + batch_size]]
        width = max(len(p.tok_input) for p in batch)
        ids = [[gen.eos] * (width - len(p.tok_input)) + list(p.tok_input) for p in batch]
        mask = [[0] * (width - len(p.tok_input)) + [1] * len(p.tok_input) for p in batch]
        for p, seq in zip(batch, gen.generate_batch(ids, mask)):
            seq = list(seq)
            out = seq[:seq.index(gen.eos) + 1] if gen.eos in seq else seq
            total += len(out)
            answers[p.id] = {"id": p.id, "n_tokens": len(out), "token_ids": out, "text": decode(out)}
        print(f"{len(answers)}/{len(prompts)} samples, {total / max(time.time() - t0, 1e-9):.1f} tokens/s",
              file=sys.stderr, flush=True)
    return [answers[p.id] for p in prompts]


def transformers_generator(model_dir, settings: Settings) -> Generator:
    """Greedy generation with transformers on the CPU, seeded, with the given threads and dtype."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    torch.set_num_threads(settings.threads)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, settings.dtype)).eval()
    eos = model.generation_config.eos_token_id

    def generate_batch(ids, mask):
        with torch.inference_mode():
            out = model.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False,
                                 max_new_tokens=settings.max_new_tokens, min_new_tokens=settings.min_new_tokens,
                                 pad_token_id=eos)
        return out[:, len(ids[0]):].tolist()

    return Generator(generate_batch, eos, {"transformers": transformers.__version__, "torch": torch.__version__,
                                           "python": sys.version.split()[0]})


def provenance(model_dir: Path, tokenizer_sha256: str, gen: Generator, settings: Settings, answers: list[dict],
               seconds: float) -> dict:
    """What reference.json records of any generation: the weights, tokenizer, backend, settings,
    versions, date and size (each data set adds its own keys)."""
    model_dir = Path(model_dir)
    return {
        "model_dir": model_dir.name,             # the folder's name: no path of one machine
        "model_sha256": {p.name: sha256_file(str(p)) for p in sorted(model_dir.glob("*.safetensors"))},
        "tokenizer_sha256": tokenizer_sha256,
        "backend": BACKEND.format(settings.batch_size),
        "settings": settings.record(gen.eos),
        "versions": gen.versions,
        "date": now(),
        "samples": len(answers),
        "generation_seconds": round(seconds, 1),
        "generated_tokens": sum(a["n_tokens"] for a in answers),
    }


def command_line(doc: str):
    """(parser, its `generate` and `score` sub-parsers): a reference module's command line, with the
    options every `generate` takes (the model folder and how it runs)."""
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    generate, score = sub.add_parser("generate"), sub.add_parser("score")
    generate.add_argument("--model", required=True, help="converted embedded model folder (HF safetensors)")
    generate.add_argument("--batch-size", type=int, default=Settings.batch_size)
    generate.add_argument("--threads", type=int, default=Settings.threads)
    generate.add_argument("--dtype", default=Settings.dtype, choices=["float32", "bfloat16"])
    return parser, generate, score


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_jsonl(path, rows) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(path)


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
