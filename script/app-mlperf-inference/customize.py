"""app-mlperf-inference: run the benchmark's LoadGen tests (see docs/harness.md)."""


def validate(i):
    """The round: refused when unknown or without the model; none given (top step): the newest round
    that has the model, planned as if asked for (mlperf_llm.rounds)."""
    from mlperf_llm.rounds import validate_hook_result
    return validate_hook_result(i['env'], benchmark=True)


def preprocess(i):
    from mlperf_llm import outcomes as records
    from mlperf_llm.harness.cmenv import env_from_outcomes, request_from_env, outcome_records
    from mlperf_llm.harness.driver import HarnessInputError, run_all
    from mlperf_llm.harness.qsl import DatasetError
    from mlperf_llm.harness.rounds import RoundError
    from mlperf_llm.harness.userconf import UserConfError

    env, state = i['env'], i['state']
    try:
        req = request_from_env(env)
        outcomes = run_all(req)
    except (HarnessInputError, DatasetError, RoundError, UserConfError) as e:
        return {'return': 1, 'error': str(e)}
    env.update(env_from_outcomes(req, outcomes))
    state[records.HARNESS] = records.to_state(outcome_records(req, outcomes))
    print(f'\nMLPerf {req.model} tests:')
    for o in outcomes:
        print('  ' + o.line())
    failed = [o for o in outcomes if o.verdict == 'FAILED']
    if failed:
        f = failed[0]
        return {'return': 1, 'error': f'{f.scenario} {f.mode} test FAILED: '
                                      f'{"; ".join(f.reasons[:2])}; logs kept in {f.directory} (harness.log)'}
    return {'return': 0}
