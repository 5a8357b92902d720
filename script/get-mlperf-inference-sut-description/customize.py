"""get-mlperf-inference-sut-description: detect the machine and write <hw_name>.json with every field
the submission checker requires, plus review-<hw_name>.txt naming the fields left at a default.

Software versions come from the env the run's other steps publish: CM_VLLM_VERSION (or
--framework_version), CM_TORCH_VERSION, CM_LOADGEN_VERSION, CM_PYTHON_VERSION, and
CM_MLPERF_OTHER_SOFTWARE ("name version; name version").
"""
import os
import re
import sys

from mlperf_llm.sysinfo.sutenv import software_from_env, sut_inputs_from_env
from mlperf_llm.sysinfo.probe import collect
from mlperf_llm.files import write_atomic, write_json_atomic
from mlperf_llm.sysinfo.sut import (HOST_VIEW_ENV, SutInputError, build_sut_description, load_host_view,
                                    load_user_json)


def preprocess(i):
    env = i['env']
    try:
        overrides = load_user_json(env['CM_MLPERF_SUT_DESC_JSON']) if env.get('CM_MLPERF_SUT_DESC_JSON') else {}
        inputs = sut_inputs_from_env(env, overrides)
        env.setdefault('CM_CM4MLPERF_LLM_VERSION', _tool_version(i['script_path']))
        host = load_host_view(env[HOST_VIEW_ENV]) if env.get(HOST_VIEW_ENV) else None   # --docker=chain's host
        desc = build_sut_description(collect(), inputs, software_from_env(env), host)
    except SutInputError as e:
        return {'return': 1, 'error': str(e)}
    out_dir = env.get('CM_MLPERF_SUT_DESC_DIR') or os.getcwd()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f'{inputs.hw_name}.json')
    review_path = os.path.join(out_dir, f'review-{inputs.hw_name}.txt')
    write_json_atomic(path, desc.fields)
    write_atomic(review_path, desc.review_text())
    env['CM_HW_NAME'] = inputs.hw_name
    env['CM_MLPERF_SUT_DESC_PATH'] = path
    env['CM_MLPERF_SUT_DESC_REVIEW_PATH'] = review_path
    env['CM_MLPERF_SUT_DESC_REVIEW_FIELDS'] = ','.join(sorted(desc.review))
    i['state']['CM_SUT_META'] = desc.fields
    print(f'SUT description: {path}', file=sys.stderr)
    if desc.review:
        print(desc.review_text().rstrip(), file=sys.stderr)
    return {'return': 0}


def _tool_version(script_path):
    cmr = os.path.join(script_path, '..', '..', 'cmr.yaml')
    try:
        with open(cmr) as f:
            m = re.search(r'^version:\s*(\S+)', f.read(), re.M)
    except OSError:
        return ''
    return m.group(1) if m else ''
