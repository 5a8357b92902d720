"""Thin hooks: pick the route and its arguments; run.sh fetches and checks in the ml venv;
postprocess reads the result file (which never holds a token) into env."""
import json
import os
import shlex

from mlperf_llm.models.errors import ModelError
from mlperf_llm.models.hf_hub import llama2_repo

RESULT = 'model-result.json'


def preprocess(i):
    env = i['env']
    if not env.get('CM_VENV_PYTHON'):
        return {'return': 1, 'error': 'CM_VENV_PYTHON is not set: the install,python-venv,_name.ml dependency did not run'}
    checkpoint = env.get('CM_ML_MODEL_CHECKPOINT', '')
    dest = os.path.join(os.getcwd(), 'checkpoint')
    if checkpoint:
        if not os.path.isdir(checkpoint):
            return {'return': 1, 'error': f"--checkpoint={checkpoint}: no such folder; pass the folder that holds "
                    "config.json, the weights and the tokenizer"}
        args = ['--checkpoint', os.path.abspath(checkpoint)]
        env['CM_ML_MODEL_REPO_ID'] = env.get('CM_ML_MODEL_REPO_ID', '')
    elif env.get('CM_ML_MODEL_SOURCE') == 'r2':
        if (env['CM_ML_MODEL_SIZE'], env['CM_ML_MODEL_PRECISION']) != ('70b', 'fp16'):
            return {'return': 1, 'error': "_r2: MLCommons publishes only the 70B fp16 checkpoint; drop _7b/_fp8/_gptq "
                    "or use the hub route (_hf)"}
        args = ['--r2-uri', env['CM_ML_MODEL_R2_URI'], '--dest', dest]
    else:
        try:
            repo = env.get('CM_ML_MODEL_REPO_ID') or llama2_repo(env['CM_ML_MODEL_SIZE'], env['CM_ML_MODEL_PRECISION'])
        except ModelError as e:
            return {'return': 1, 'error': str(e)}
        env['CM_ML_MODEL_REPO_ID'] = repo
        args = ['--repo-id', repo, '--revision', env.get('CM_ML_MODEL_REVISION', 'main'), '--dest', dest]
    env['CM_ML_MODEL_GET_ARGS'] = ' '.join(shlex.quote(a) for a in args + ['--result-json', RESULT])
    return {'return': 0}


def postprocess(i):
    env = i['env']
    try:
        with open(RESULT) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        return {'return': 1, 'error': f'{os.path.abspath(RESULT)} is missing or unreadable ({e}); '
                'read get-ml-model-llama2.log'}
    report = res['report']
    env['CM_ML_MODEL_PATH'] = env['CM_ML_MODEL_LLAMA2_PATH'] = res['path']
    env['CM_ML_MODEL_NAME'] = env.get('CM_ML_MODEL_REPO_ID') or os.path.basename(res['path'].rstrip('/'))
    env['CM_ML_MODEL_SOURCE_REF'] = res['source']
    env['CM_ML_MODEL_QUANTIZATION'] = report['quantization']
    env['CM_ML_MODEL_WEIGHT_BYTES'] = str(report['weight_bytes'])
    print(f"{env['CM_ML_MODEL_NAME']}: {len(report['shards'])} weight file(s), {report['weight_bytes'] / 1e9:.2f} GB, "
          f"{report['loaded_with'] or 'files checked'} at {res['path']}")
    return {'return': 0}
