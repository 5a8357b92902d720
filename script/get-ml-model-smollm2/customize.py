"""Thin hooks: run the conversion in the ml venv (run.sh), then report the checkpoint."""
import os

from mlperf_llm.models.environment import write_lock
from mlperf_llm.models.smollm2 import MODEL_NAME, read_provenance

OUT = 'SmolLM2-135M-Instruct-hf'


def preprocess(i):
    env = i['env']
    if not env.get('CM_VENV_PYTHON'):
        return {'return': 1, 'error': 'CM_VENV_PYTHON is not set: the install,python-venv,_name.ml '
                'dependency did not run (check --adr.ml-venv.tags)'}
    env['CM_ML_MODEL_SMOLLM2_OUT'] = os.path.join(os.getcwd(), OUT)
    return {'return': 0}


def postprocess(i):
    env = i['env']
    path = env['CM_ML_MODEL_SMOLLM2_OUT']
    record = read_provenance(path)
    if not record or not record.get('check_passed'):
        return {'return': 1, 'error': f'{path} has no passed conversion record (conversion.json); '
                'rerun with --new and read get-ml-model-smollm2.log'}
    env['CM_ML_MODEL_PATH'] = path
    env['CM_ML_MODEL_SMOLLM2_PATH'] = path
    env['CM_ML_MODEL_NAME'] = MODEL_NAME
    env['CM_ML_MODEL_FILE_WITH_PATH'] = os.path.join(path, 'model.safetensors')
    env['CM_ML_MODEL_DTYPE'] = record['dtype']
    env['CM_ML_MODEL_SOURCE_SHA256'] = record['source_sha256']
    env.update(write_lock(env, os.getcwd()))
    print(f"{MODEL_NAME} ({record['dtype']}) at {path}; greedy check: {record['check_answer']!r}")
    return {'return': 0}
