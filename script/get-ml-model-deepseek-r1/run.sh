#!/bin/bash
# mlperf_llm.models.hf_hub fetches (resumable, checksum-verified, renamed into place when complete)
# or checks the folder given; it reads HF_TOKEN, HF_ENDPOINT and CM_R2_ACCESS_TOKEN itself.
set -euo pipefail
eval "set -- ${CM_ML_MODEL_GET_ARGS}"
export HF_HUB_DISABLE_PROGRESS_BARS=${HF_HUB_DISABLE_PROGRESS_BARS:-1}
exec "${CM_VENV_PYTHON}" -m mlperf_llm.models.hf_hub "$@"
