"""get-mlperf-inference-loadgen: mlcommons-loadgen pinned to the wheels whose built-in mlperf.conf has
the round's seeds (_r4.1 -> 4.1.12..4.1.30, _r5.0 -> 5.0.9..5.0.21, _r5.1 -> 5.1.x) in the selected
venv, then checked: the seed it applies for llama2-70b must be the round's, or the checker would
reject every result."""
import sys

from mlperf_llm.sysinfo.pyenv import PyEnvError, installed_version
from mlperf_llm.sysinfo.rounds import RoundError, in_range, loadgen_seed, round_info


def preprocess(i):
    env = i['env']
    try:
        rnd = round_info(env.get('CM_MLPERF_INFERENCE_VERSION', '5.1'))
    except RoundError as e:
        return {'return': 1, 'error': str(e)}
    python = env.get('CM_GENERIC_PYTHON_PACKAGE_PYTHON', '')
    try:
        version = installed_version(python, 'mlcommons-loadgen')    # what is there now, not what a step said
    except PyEnvError as e:
        return {'return': 1, 'error': str(e)}
    if not in_range(version, rnd):
        return {'return': 1, 'error': f'mlcommons-loadgen {version or "(none)"} is installed, but round '
                f'{rnd.name} needs {rnd.loadgen_min} .. {rnd.loadgen_max}: check --adr.loadgen-pip.* overrides'}
    env['CM_LOADGEN_VERSION'] = version
    env['CM_LOADGEN_PYTHON'] = python
    env['CM_MLPERF_INFERENCE_ROUND'] = rnd.name
    try:
        seed = loadgen_seed(python)
    except RoundError as e:
        return {'return': 1, 'error': str(e)}
    if seed != rnd.qsl_rng_seed:
        return {'return': 1, 'error': f'mlcommons-loadgen {version} applies qsl_rng_seed {seed}, but {rnd.name} '
                f'requires {rnd.qsl_rng_seed}: this wheel does not belong to the round; pin another '
                f'wheel between {rnd.loadgen_min} and {rnd.loadgen_max}'}
    env['CM_LOADGEN_QSL_RNG_SEED'] = str(seed)
    env['CM_LOADGEN_SEED_CHECK'] = 'ok'
    print(f'mlcommons-loadgen {version} for {rnd.name}: qsl_rng_seed {seed} is the round\'s', file=sys.stderr)
    return {'return': 0}
