"""Thin hooks: env -> DatasetRequest -> mlperf_llm.datasets.get.get_dataset -> env."""
import os

from mlperf_llm.datasets.get import DatasetRequest, get_dataset
from mlperf_llm.datasets.r2 import TOKEN_ENV
from mlperf_llm.datasets.schema import DatasetError


def preprocess(i):
    env = i['env']
    size = env.get('CM_DATASET_SIZE', '')
    if size and not size.isdigit():
        return {'return': 1, 'error': f"_size.{size}: the size must be a positive integer, e.g. _size.100"}
    req = DatasetRequest(
        split=env.get('CM_DATASET_SPLIT', 'validation'),
        out_dir=os.getcwd(),
        size=int(size) if size else None,
        dataset_path=env.get('CM_DATASET_PATH') or None,
        route=env.get('CM_DATASET_DOWNLOAD_TOOL', 'r2-downloader'),
        uri=env['CM_DATASET_R2_URI'],
        rclone_remote=env['CM_DATASET_RCLONE_REMOTE'],
        tokenizer_dir=env.get('CM_DATASET_TOKENIZER_PATH') or env.get('CM_ML_MODEL_PATH') or None,
        r2_token=os.environ.get(TOKEN_ENV),  # read from the process only, never from or into env
    )
    try:
        res = get_dataset(req)
    except DatasetError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_DATASET_PREPROCESSED_PATH'] = str(res.path)
    env['CM_DATASET_ROWS'] = str(res.rows)
    if res.split == 'calibration':
        env['CM_DATASET_CALIBRATION_PATH'] = str(res.path)
    elif res.split == 'validation':
        env['CM_DATASET_OPENORCA_PREPROCESSED_PATH'] = str(res.path)
    if res.reference_file:
        env['CM_DATASET_REFERENCE_FILE'] = str(res.reference_file)
        env['CM_DATASET_MAX_NEW_TOKENS'] = str(res.max_new_tokens)
    print(f"dataset {res.split}: {res.rows} rows at {res.path} ({res.source})")
    return {'return': 0}


def postprocess(i):
    return {'return': 0}
