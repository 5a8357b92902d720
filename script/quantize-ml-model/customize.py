"""Thin hooks: arguments for run.sh (the quant venv does the work), then the accuracy comparison
with the project's accuracy library (the same scoring as process-mlperf-accuracy)."""
import json
import os
import shlex

from mlperf_llm.models.quantize import RECORD_FILE, SCHEMES

OUT = 'quantized'


def preprocess(i):
    env = i['env']
    scheme = env.get('CM_QUANT_SCHEME', 'fp8')
    if scheme not in SCHEMES:
        return {'return': 1, 'error': f"scheme {scheme!r} is unknown; use _fp8, _gptq or _w8a8"}
    model = env.get('CM_QUANT_MODEL_PATH') or env.get('CM_ML_MODEL_PATH', '')
    calib = env.get('CM_QUANT_CALIBRATION_PATH') or env.get('CM_DATASET_PREPROCESSED_PATH', '')
    for name, value, fix in (('--model_path', model, 'a folder with config.json and weights'),
                             ('--calibration_path', calib, 'a processed OpenOrca-format pickle')):
        if not value or not os.path.exists(value):
            return {'return': 1, 'error': f"{name}={value!r} does not exist; with _custom pass {fix}"}
    for key in ('CM_QUANT_NUM_SAMPLES', 'CM_QUANT_GROUP_SIZE', 'CM_QUANT_EVAL_SAMPLES', 'CM_QUANT_MAX_SEQ_LEN'):
        if not str(env.get(key, '')).isdigit():
            return {'return': 1, 'error': f"{key}={env.get(key)!r} must be a whole number"}
    n, n_eval = int(env['CM_QUANT_NUM_SAMPLES']), int(env['CM_QUANT_EVAL_SAMPLES'])
    same = os.path.abspath(calib) == os.path.abspath(env.get('CM_DATASET_PREPROCESSED_PATH', calib))
    args = [model, os.path.join(os.getcwd(), OUT), '--scheme', scheme, '--calibration', calib,
            '--num-samples', str(n), '--max-seq-len', env['CM_QUANT_MAX_SEQ_LEN'],
            '--group-size', env['CM_QUANT_GROUP_SIZE']]
    if n_eval:
        args += ['--eval-data', env.get('CM_DATASET_PREPROCESSED_PATH') or calib, '--eval-samples', str(n_eval),
                 '--eval-offset', str(n if same else 0), '--eval-dir', os.getcwd(),
                 '--eval-max-new-tokens', env['CM_QUANT_EVAL_MAX_NEW_TOKENS']]
        env['CM_QUANT_EVAL_DATA'] = env.get('CM_DATASET_PREPROCESSED_PATH') or calib
        env['CM_QUANT_EVAL_OFFSET'] = str(n if same else 0)
    env['CM_QUANT_SOURCE_MODEL'] = model
    env['CM_QUANT_ARGS'] = ' '.join(shlex.quote(a) for a in args)
    return {'return': 0}


def postprocess(i):
    env = i['env']
    out = os.path.join(os.getcwd(), OUT)
    with open(os.path.join(out, RECORD_FILE)) as f:
        record = json.load(f)
    env['CM_ML_MODEL_PATH'] = env['CM_ML_MODEL_QUANTIZED_PATH'] = out
    env['CM_ML_MODEL_QUANTIZATION'] = f"compressed-tensors {record['scheme']}"
    env['CM_QUANT_GROUP_SIZE_USED'] = str(record['group_size'] or '')
    env['CM_QUANT_VLLM_CPU'] = record['vllm_cpu']
    if record['group_size_note']:
        print(f"note: {record['group_size_note']}")
    print(f"vLLM on CPU: {record['vllm_cpu']}")
    if int(env.get('CM_QUANT_EVAL_SAMPLES', '0')):
        from mlperf_llm.models.quant_eval import compare
        try:
            table = compare(os.getcwd(), record['scheme'], env['CM_QUANT_EVAL_DATA'],
                            int(env['CM_QUANT_EVAL_OFFSET']), env['CM_QUANT_SOURCE_MODEL'])
        except ValueError as e:
            return {'return': 1, 'error': f"scoring the quantized model failed: {e}"}
        for k, v in table.env().items():
            env[k] = v
        print(table.text())
    return {'return': 0}
