"""Thin hooks: audit.config for the TEST06 run (preprocess), its verification (postprocess)."""
import os

from cmcontract.yesno import is_yes


def preprocess(i):
    from mlperf_llm.accuracy.test06_config import AuditConfigError, audit_config, short_query_count
    from mlperf_llm.harness.sizing import SizingError
    from mlperf_llm.rounds import RoundError, round_for

    env = i['env']
    if is_yes(env.get('CM_MLPERF_TEST06_VERIFY_ONLY')):
        return {'return': 0}
    if not env.get('CM_MLPERF_AUDIT_CONF'):
        try:
            rnd = round_for(env.get('CM_MLPERF_INFERENCE_VERSION', ''), env['CM_MLPERF_MODEL'])
            given = short_query_count(env.get('CM_MLPERF_TEST06_QUERY_COUNT', ''),
                                      env.get('CM_MLPERF_EXECUTION_MODE', 'test'))
            counts, why = (None, '') if given else _sized_counts(env)
            path, origin = audit_config(env.get('CM_MLPERF_INFERENCE_SOURCE', ''), os.getcwd(), rnd, given,
                                        counts, why)
        except (AuditConfigError, RoundError, SizingError) as e:
            return {'return': 1, 'error': str(e)}
        env['CM_MLPERF_AUDIT_CONF'] = path
        print(f'TEST06: {origin}')
    env['CM_MLPERF_TEST06_AUDIT_CONF'] = env['CM_MLPERF_AUDIT_CONF']
    return {'return': 0}


def _sized_counts(env):
    """Each scenario's TEST06 count where --test_sizes gives it (a replay: the recorded run's); in a
    test run sized to the host (CM_MLPERF_SIZE_TO_HOST), from what its tests measured
    (mlperf_llm.harness.sizing); (counts or None, how they were chosen)."""
    from mlperf_llm.harness.sizing import SizingError, test06_counts
    from mlperf_llm.harness.testsizes import TestSizesError, parse
    try:
        given = {k.split('/')[0]: n for k, n in parse(env.get('CM_MLPERF_TEST_SIZES', '')).items()
                 if k.endswith('/TEST06')}
    except TestSizesError as e:
        raise SizingError(str(e)) from None
    if given and env.get('CM_MLPERF_EXECUTION_MODE', 'test') == 'test':
        return given, 'as --test_sizes gives it (the recorded run\'s)'
    if not is_yes(env.get('CM_MLPERF_SIZE_TO_HOST')) or env.get('CM_MLPERF_EXECUTION_MODE', 'test') != 'test':
        return None, ''
    scenarios = [s.strip() for s in env.get('CM_MLPERF_LOADGEN_SCENARIO', 'Offline').split(',') if s.strip()]
    targets = {s: float(env[f'CM_MLPERF_LOADGEN_{s.upper()}_TARGET_QPS'])
               for s in scenarios if env.get(f'CM_MLPERF_LOADGEN_{s.upper()}_TARGET_QPS')}
    return test06_counts(env.get('CM_MLPERF_RESULTS_DIR', ''), scenarios, targets), 'sized to this host'


def postprocess(i):
    from mlperf_llm import outcomes as records
    from mlperf_llm.accuracy.log import AccuracyLogError
    from mlperf_llm.accuracy.process import Test06Request, test06_verdict, verify_test06

    env, state = i['env'], i['state']
    results = env.get('CM_MLPERF_RESULTS_DIR', '')
    if not results:
        return {'return': 1, 'error': 'no results folder: pass --results_dir '
                '(where <model>/<Scenario>/TEST06/ is written)'}
    eos = env.get('CM_MLPERF_EOS_TOKEN_ID', '')
    if not eos:
        from mlperf_llm.accuracy.test06 import eos_token_id_of
        try:
            eos_id, origin = eos_token_id_of(env.get('CM_ML_MODEL_PATH', ''), env.get('CM_MLPERF_MODEL', ''))
        except ValueError as e:
            return {'return': 1, 'error': str(e)}
        eos = str(eos_id)
        print(f'TEST06: EOS token id {eos} from {origin}')
    if not eos.lstrip('-').isdigit():
        return {'return': 1, 'error': f'--eos_token_id={eos!r} is not an integer'}
    from mlperf_llm.rounds import RoundError, expand_scenarios, round_for
    try:
        rnd = round_for(env.get('CM_MLPERF_INFERENCE_VERSION', ''), env['CM_MLPERF_MODEL'])
    except RoundError as e:
        return {'return': 1, 'error': str(e)}
    req = Test06Request(results_dir=results, model=env['CM_MLPERF_MODEL'],
                        scenarios=expand_scenarios(env['CM_MLPERF_LOADGEN_SCENARIO'], rnd, env['CM_MLPERF_MODEL']),
                        eos_token_id=int(eos), dtype=env['CM_MLPERF_ACCURACY_DTYPE'],
                        round=env.get('CM_MLPERF_INFERENCE_VERSION', ''))
    try:
        outcomes = verify_test06(req)
    except AccuracyLogError as e:
        from mlperf_llm.sysinfo.loadgen_src import not_verified_reason
        problem = not_verified_reason(env.get('CM_LOADGEN_VERSION', ''), env.get('CM_LOADGEN_TEST06_PROBLEM', ''))
        if not problem:
            return {'return': 1, 'error': str(e)}
        reason = f'TEST06 NOT VERIFIED: {problem}; the run goes on'
        print(reason)
        env['CM_MLPERF_TEST06_PASSED'] = 'not-verified'
        state[records.TEST06] = records.to_state([records.Test06Verdict(sc, 'NOT VERIFIED', reason=reason)
                                                   for sc in req.scenarios])
        return {'return': 0}
    except ValueError as e:
        return {'return': 1, 'error': str(e)}
    for o in outcomes:
        print(f'TEST06 {o.scenario}: ' + '; '.join(o.lines) + f' ({o.test_dir})')
        for problem in o.result.problems:
            print('  ' + problem)
    env['CM_MLPERF_TEST06_PASSED'] = 'yes' if all(o.result.passed for o in outcomes) else 'no'
    env['CM_MLPERF_TEST06_DIRS'] = ','.join(o.test_dir for o in outcomes)
    state[records.TEST06] = records.to_state([test06_verdict(o) for o in outcomes])
    return {'return': 0}
