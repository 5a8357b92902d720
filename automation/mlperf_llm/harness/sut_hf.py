"""The SUT for the transformers backend (the reference SUT.py way): generate() in-process.

Greedy, max_new_tokens=1024, min_new_tokens=1. Offline batches `batch_size` samples with
left padding; Server/Interactive run one sample at a time and report the first token as
soon as generate() produces it. Responses are the generated ids up to and including EOS.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

from .qsl import Dataset
from .responder import Responder


@dataclass(frozen=True)
class HfSutConfig:
    model_path: str
    streaming: bool
    batch_size: int = 1
    dtype: str = "float32"
    max_new_tokens: int = 1024
    device: str = "cpu"             # cpu | cuda (the first visible CUDA device)


class HfDeviceError(RuntimeError):
    """The device asked for is not there: names it, the interpreter and the fix."""


def check_device(torch, device: str) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        import sys
        raise HfDeviceError(f"device cuda: torch {torch.__version__} in {sys.executable} sees no CUDA device "
                            f"(torch.cuda.is_available() is False); fix: run on a machine with an NVIDIA GPU and "
                            f"a CUDA build of torch, or use --device=cpu")


def load_tokenizer(model_path: str):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(model_path)


class _FirstToken:
    """A generate() streamer that reports the first generated token once (the prompt comes first)."""

    def __init__(self, on_first):
        self.on_first, self.seen_prompt, self.done = on_first, False, False

    def put(self, value) -> None:
        if not self.seen_prompt:
            self.seen_prompt = True
            return
        if not self.done:
            self.done = True
            self.on_first(int(value.reshape(-1)[0]))

    def end(self) -> None:
        return None


class HfSUT:
    def __init__(self, ds: Dataset, cfg: HfSutConfig, responder: Responder):
        import torch
        from transformers import AutoModelForCausalLM

        self.torch = torch
        self.ds, self.cfg, self.responder = ds, cfg, responder
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg.dtype]
        check_device(torch, cfg.device)
        self.model = AutoModelForCausalLM.from_pretrained(cfg.model_path, dtype=dtype).to(cfg.device)
        self.model.eval()
        tok = load_tokenizer(cfg.model_path)
        self.eos = tok.eos_token_id
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else self.eos
        self.q: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="hf-sut", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.q.put(None)
        self.thread.join()

    def served_per_endpoint(self) -> dict[str, int]:
        return {}

    def issue_queries(self, query_samples) -> None:
        items = [(q.id, q.index) for q in query_samples]
        self.responder.issued(items)
        step = 1 if self.cfg.streaming else max(1, self.cfg.batch_size)
        for k in range(0, len(items), step):
            self.q.put(items[k:k + step])

    def flush_queries(self) -> None:
        return None

    def _trim(self, ids: list[int]) -> list[int]:
        if self.eos in ids:
            ids = ids[:ids.index(self.eos) + 1]
        return ids

    def _loop(self) -> None:
        while True:
            batch = self.q.get()
            if batch is None:
                return
            try:
                self._run(batch)
            except Exception as e:  # never leave LoadGen waiting
                for qid, idx in batch:
                    self.responder.fail(qid, f"sample {idx}: {type(e).__name__}: {e}", False, self.cfg.streaming)

    def _run(self, batch: list[tuple[int, int]]) -> None:
        torch = self.torch
        prompts = [self.ds.tok_input[idx] for _, idx in batch]
        width = max(len(p) for p in prompts)
        device = self.cfg.device
        ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in prompts], dtype=torch.long, device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long,
                            device=device)
        streamer = None
        if self.cfg.streaming:
            qid = batch[0][0]
            streamer = _FirstToken(lambda t: self.responder.first_token(qid, t))
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=self.cfg.max_new_tokens,
                                      min_new_tokens=1, do_sample=False, num_beams=1, pad_token_id=self.pad,
                                      streamer=streamer)
        for row, (qid, _) in enumerate(batch):
            self.responder.complete(qid, self._trim(out[row, width:].tolist()))
