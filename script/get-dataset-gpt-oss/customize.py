"""Thin hooks: env -> GptOssRequest -> mlperf_llm.datasets.get_gptoss.get_gptoss -> env."""
import os

from cmcontract.yesno import is_yes
from mlperf_llm.datasets.get_gptoss import GptOssRequest, get_gptoss
from mlperf_llm.datasets.r2 import TOKEN_ENV
from mlperf_llm.datasets.schema import DatasetError


def preprocess(i):
    env = i['env']
    embedded = is_yes(env.get('CM_DATASET_EMBEDDED'))
    tokenizer_dir = env.get('CM_DATASET_TOKENIZER_PATH') or env.get('CM_ML_MODEL_PATH') or None
    req = GptOssRequest(
        out_dir=os.getcwd(),
        embedded=embedded,
        dataset_dir=env.get('CM_DATASET_PATH') or None,
        lcb_tests=tuple(f for f in env.get('CM_DATASET_LCB_TESTS_FILES', '').split(',') if f.strip()),
        lcb_revision=env.get('CM_DATASET_LCB_REVISION') or 'main',
        uri=env.get('CM_DATASET_R2_URI') or None,
        tokenizer_dir=tokenizer_dir if embedded else None,
        r2_token=os.environ.get(TOKEN_ENV),  # read from the process only, never from or into env
    )
    try:
        res = get_gptoss(req)
    except DatasetError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_DATASET_PREPROCESSED_PATH'] = str(res.paths['accuracy'])
    env['CM_DATASET_PERFORMANCE_PATH'] = str(res.paths['performance'])
    env['CM_DATASET_COMPLIANCE_PATH'] = str(res.paths['compliance'])
    env['CM_DATASET_ROWS'] = str(res.rows['accuracy'])
    env['CM_DATASET_PERFORMANCE_ROWS'] = str(res.rows['performance'])
    env['CM_DATASET_COMPLIANCE_ROWS'] = str(res.rows['compliance'])
    if res.tests is not None:
        env['CM_DATASET_LCB_TESTS'] = str(res.tests)
    if embedded:
        env['CM_TMP_DATASET_TOKENIZER_FILE'] = os.path.join(os.path.abspath(tokenizer_dir), 'tokenizer.json')
    sets = ', '.join(f"{k} {n} rows" for k, n in res.rows.items())
    print(f"dataset gpt-oss{' (embedded)' if embedded else ''}: {sets} in {os.path.dirname(str(res.paths['accuracy']))} "
          f"({res.source})")
    for note in res.notes:
        print(f"note: {note}")
    return {'return': 0}


def postprocess(i):
    return {'return': 0}
