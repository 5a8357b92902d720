"""Thin hooks: env -> DeepSeekRequest -> mlperf_llm.datasets.get_deepseek.get_deepseek -> env."""
import os

from cmcontract.yesno import YesNoError, is_yes, parse_yes_no
from mlperf_llm.datasets.get_deepseek import DeepSeekRequest, get_deepseek
from mlperf_llm.datasets.r2 import TOKEN_ENV
from mlperf_llm.datasets.schema import DatasetError


def preprocess(i):
    env = i['env']
    embedded = is_yes(env.get('CM_DATASET_EMBEDDED'))
    tokenizer_dir = env.get('CM_DATASET_TOKENIZER_PATH') or env.get('CM_ML_MODEL_PATH') or None
    try:
        calibration = parse_yes_no('--calibration', env.get('CM_DATASET_CALIBRATION'))
    except YesNoError as e:
        return {'return': 1, 'error': str(e)}
    req = DeepSeekRequest(
        out_dir=os.getcwd(),
        embedded=embedded,
        dataset_path=env.get('CM_DATASET_PATH') or None,
        calibration=calibration,
        lcb_tests=tuple(f.strip() for f in env.get('CM_DATASET_LCB_TESTS_FILES', '').split(',') if f.strip()),
        lcb_revision=env.get('CM_DATASET_LCB_REVISION') or 'main',
        uri=env.get('CM_DATASET_R2_URI') or None,
        tokenizer_dir=tokenizer_dir,
        r2_token=os.environ.get(TOKEN_ENV),  # read from the process only, never from or into env
    )
    try:
        res = get_deepseek(req)
    except DatasetError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_DATASET_PREPROCESSED_PATH'] = str(res.prepared)
    env['CM_DATASET_PERFORMANCE_PATH'] = str(res.prepared)
    env['CM_DATASET_REFERENCE_PATH'] = str(res.reference)
    env['CM_DATASET_ROWS'] = str(res.rows)
    env['CM_DATASET_PERFORMANCE_ROWS'] = str(res.rows)
    if res.calibration is not None:
        env['CM_DATASET_CALIBRATION_PATH'] = str(res.calibration)
    if res.tests is not None:
        env['CM_DATASET_LCB_TESTS'] = str(res.tests)
    if req.dataset_path:
        env['CM_TMP_DATASET_USER_FILE'] = str(res.reference)
        if res.calibration is not None:
            env['CM_TMP_DATASET_USER_CALIBRATION_FILE'] = str(res.calibration)
    if tokenizer_dir:
        folder = os.path.abspath(tokenizer_dir)
        env['CM_TMP_DATASET_TOKENIZER_FILE'] = os.path.join(folder, 'tokenizer.json')
        env['CM_TMP_DATASET_TOKENIZER_CONFIG'] = os.path.join(folder, 'tokenizer_config.json')   # the chat template
    cal = f", calibration {res.calibration_rows} rows" if res.calibration is not None else ""
    print(f"dataset deepseek-r1{' (embedded)' if embedded else ''}: {res.rows} rows in {res.prepared}{cal} "
          f"({res.source})")
    for note in res.notes:
        print(f"note: {note}")
    return {'return': 0}


def postprocess(i):
    return {'return': 0}
