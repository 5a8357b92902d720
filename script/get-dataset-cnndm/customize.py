"""Thin hooks: env -> CnndmRequest -> mlperf_llm.datasets.get_cnndm.get_cnndm -> env."""
import os

from cmcontract.yesno import is_yes
from mlperf_llm.datasets.get_cnndm import CnndmRequest, get_cnndm
from mlperf_llm.datasets.r2 import TOKEN_ENV
from mlperf_llm.datasets.schema import DatasetError


def preprocess(i):
    env = i['env']
    embedded = is_yes(env.get('CM_DATASET_EMBEDDED'))
    tokenizer_dir = env.get('CM_DATASET_TOKENIZER_PATH') or env.get('CM_ML_MODEL_PATH') or None
    req = CnndmRequest(
        split=env.get('CM_DATASET_SPLIT', 'validation'),
        out_dir=os.getcwd(),
        embedded=embedded,
        dataset_path=env.get('CM_DATASET_PATH') or None,
        uri=env.get('CM_DATASET_R2_URI') or None,
        tokenizer_dir=tokenizer_dir if embedded else None,
        r2_token=os.environ.get(TOKEN_ENV),  # read from the process only, never from or into env
    )
    try:
        res = get_cnndm(req)
    except DatasetError as e:
        return {'return': 1, 'error': str(e)}
    outputs = {'CM_DATASET_PREPROCESSED_PATH': res.path, 'CM_DATASET_ROWS': res.rows,
               'CM_DATASET_MAX_NEW_TOKENS': res.max_new_tokens,
               'CM_DATASET_REFERENCE_FILE': res.reference_file,           # embedded, once it is made
               'CM_TMP_DATASET_TOKENIZER_FILE': res.tokenizer_file}       # embedded: re-checked on reuse
    env.update({k: str(v) for k, v in outputs.items() if v is not None})
    print(f"dataset cnndm {res.split}{' (embedded)' if embedded else ''}: {res.rows} rows at {res.path} "
          f"({res.source})")
    for note in res.notes:
        print(f"note: {note}")
    return {'return': 0}


def postprocess(i):
    return {'return': 0}
