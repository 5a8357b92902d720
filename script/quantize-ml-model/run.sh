#!/bin/bash
# Quantize in the quant venv (llmcompressor), then greedy answers of both models for the comparison.
set -euo pipefail
eval "set -- ${CM_QUANT_ARGS}"
"${CM_VENV_PYTHON}" -m mlperf_llm.models.quantize "$@"
