"""get-mlperf-inference-loadgen: mlcommons-loadgen pinned to the round (_r4.1 -> 4.1.x, _r5.0 -> 5.0.9
.. 5.0.21, the only 5.0.x wheels with v5.0's seeds, _r5.1 -> 5.1.x) in the selected venv, then checked:
the RNG seed it applies for llama2-70b must be the round's, or the checker would reject every result."""
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
    conf = env.get('CM_MLPERF_INFERENCE_MLPERF_CONF', '')
    if not rnd.mlperf_conf_builtin and not conf:
        env['CM_LOADGEN_SEED_CHECK'] = 'skipped: v4.1 reads seeds from mlperf.conf (give --mlperf_conf)'
        print(f'mlcommons-loadgen {version} for {rnd.name}; seed check {env["CM_LOADGEN_SEED_CHECK"]}',
              file=sys.stderr)
        return {'return': 0}
    try:
        seed = loadgen_seed(python, rnd, conf)
    except RoundError as e:
        return {'return': 1, 'error': str(e)}
    if seed != rnd.qsl_rng_seed:
        return {'return': 1, 'error': f'mlcommons-loadgen {version} applies qsl_rng_seed {seed}, but {rnd.name} '
                f'requires {rnd.qsl_rng_seed}: this wheel does not belong to the round; pin another '
                f'{rnd.loadgen_series}.x with --adr.loadgen-pip.version=...'}
    env['CM_LOADGEN_QSL_RNG_SEED'] = str(seed)
    env['CM_LOADGEN_SEED_CHECK'] = 'ok'
    print(f'mlcommons-loadgen {version} for {rnd.name}: qsl_rng_seed {seed} is the round\'s', file=sys.stderr)
    return {'return': 0}
