#!/bin/bash
# Fetch (hub or R2, resumable, checksum-verified, renamed into place when complete) or check a
# local folder; HF_TOKEN / HF_ENDPOINT / CM_R2_ACCESS_TOKEN come from the process environment.
set -euo pipefail
eval "set -- ${CM_ML_MODEL_GET_ARGS}"
HF_HUB_DISABLE_PROGRESS_BARS=${HF_HUB_DISABLE_PROGRESS_BARS:-1} \
  "${CM_VENV_PYTHON}" -m mlperf_llm.models.hf_hub "$@"
