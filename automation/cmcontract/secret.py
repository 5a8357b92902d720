"""Which env names and inputs are secrets: never written to a cache entry, a record or a log.

A name is a secret when it holds TOKEN, SECRET, PASSWORD, API_KEY or APIKEY (case aside:
`HF_TOKEN`, `CM_HF_TOKEN`, `--hf_token`, `CM_R2_ACCESS_TOKEN`, `VLLM_API_KEY`), except where TOKEN
is part of a count, a tokenizer or an id: `CM_DATASET_MAX_NEW_TOKENS`, `max_tokens`,
`CM_DATASET_TOKENIZER_PATH`, `CM_MLPERF_EOS_TOKEN_ID`, `CM_MLPERF_VLLM_TOKEN_IDS` are plain values.
"""
from __future__ import annotations

import re

# TOKEN not followed by S (a count), IZ (tokenizer, tokenized) or _ID/_IDS ending a word
_SECRET = re.compile(r"SECRET|PASSWORD|API_?KEY|TOKEN(?!S|IZ|_IDS?(?![A-Z0-9]))")


def is_secret(name: str) -> bool:
    return _SECRET.search(str(name).upper()) is not None
