"""How each quantization scheme is described in the measurements JSON and in calibration.md (seed 004)."""

from __future__ import annotations

from dataclasses import dataclass

from .inputs import Quantization


@dataclass(frozen=True)
class Scheme:
    key: str
    title: str
    weight_data_types: str
    activations: str
    method: tuple[str, ...]            # bullet lines for calibration.md


SCHEMES = {
    "none": Scheme("none", "No quantization (16-bit weights and activations)", "bf16", "bf16",
                   ("Weights are used as published, in 16-bit floating point; no calibration data is used.",)),
    "fp8": Scheme("fp8", "FP8 W8A8 (8-bit Float E4M3)", "fp8", "fp8",
                  ("Symmetric, per-tensor quantization of weights and activations (static scales)",
                   "Dynamic range: max absolute value observed in original precision on the calibration set",
                   "Quantization formula: `x_q = round(clip(x / dr * m, -m, m))` where `dr` is the dynamic "
                   "range and `m` is 448 (max of FP8 E4M3)")),
    "gptq-w4a16": Scheme("gptq-w4a16", "GPTQ W4A16 (4-bit Weights, 16-bit Activations)", "int4", "bf16",
                         ("Weights: 4-bit integer, symmetric, group size {group_size}, found with GPTQ "
                          "(second-order error compensation on the calibration set)",
                          "Activations stay in 16-bit floating point")),
    "int8-w8a8": Scheme("int8-w8a8", "INT8 W8A8 (8-bit integer weights and activations)", "int8", "int8",
                        ("Weights: 8-bit integer, symmetric, per output channel, found with GPTQ on the "
                         "calibration set",
                         "Activations: 8-bit integer, symmetric, dynamic per-token scales computed at run time")),
}


def scheme_of(q: Quantization) -> Scheme:
    return SCHEMES[q.scheme]


def weight_transformations(q: Quantization) -> str:
    if q.scheme == "none":
        return "none"
    s = scheme_of(q)
    text = s.title.split(" (")[0]
    if q.scheme == "gptq-w4a16":
        text += f", group size {q.group_size}"
    elif q.scheme == "fp8":
        text += ", per-tensor static scales"
    elif q.scheme == "int8-w8a8":
        text += ", per-channel weights, dynamic per-token activations"
    if q.ignore:
        text += f"; not quantized: {', '.join(q.ignore)}"
    if q.tool:
        text += f"; with {q.tool}"
    return text


def method_lines(q: Quantization) -> list[str]:
    return [line.format(group_size=q.group_size) for line in scheme_of(q).method]
