"""Thin hooks: run the round's official submission checker on the tree and show its summary
(mlperf_llm.submission.checker; docs/submission.md)."""
import os
import shlex


def validate(i):
    """The round: refused when unknown or without the model; none given (top step): the newest round
    that has the model, planned as if asked for (mlperf_llm.rounds). Neither a round nor a model given:
    the tree's benchmarks say it (a llama2-70b-99 tree is v6.0's: v6.1's checker has no such benchmark)."""
    from mlperf_llm.rounds import oldest_newest, validate_hook_result
    from mlperf_llm.submission.precheck import benchmarks_in
    env = dict(i['env'])
    if not env.get('CM_MLPERF_INFERENCE_VERSION') and not env.get('CM_MLPERF_MODEL'):
        env['CM_MLPERF_MODEL'] = oldest_newest(benchmarks_in(env.get('CM_MLPERF_SUBMISSION_DIR') or ''))
    return validate_hook_result(env)


def preprocess(i):
    from mlperf_llm import outcomes as records
    from mlperf_llm.submission.checker import HostBound, checker_verdict, format_report, run_checker
    from mlperf_llm.submission.errors import SubmissionError

    env, state = i['env'], i['state']
    tree = env.get('CM_MLPERF_SUBMISSION_DIR', '')
    if not tree:
        return {'return': 1, 'error': 'run-mlperf-inference-submission-checker: no tree given: pass '
                '--submission_dir=DIR (what generate-mlperf-inference-submission wrote)'}
    mode = env.get('CM_MLPERF_EXECUTION_MODE') or None
    from mlperf_llm.rounds import RoundError, round_for
    try:
        version = round_for(env.get('CM_MLPERF_INFERENCE_VERSION', '')).version     # none given: the newest
    except RoundError as e:
        return {'return': 1, 'error': f'run-mlperf-inference-submission-checker: {e}'}
    # the latency bounds the benchmark step found out of this host's reach (harness/hostlimit.py)
    bounds = tuple(HostBound(t.scenario, t.ttft_limit_ms, t.tpot_limit_ms, t.host_limit)
                   for t in records.from_state(state, records.HARNESS)
                   if t.host_limit and t.mode == 'performance' and t.ttft_limit_ms and t.tpot_limit_ms)
    try:
        report = run_checker(tree, version, env.get('CM_MLPERF_SUBMITTER') or None,
                             env.get('CM_MLPERF_INFERENCE_SOURCE') or None, workdir=os.getcwd(), mode=mode,
                             extra_args=tuple(shlex.split(env.get('CM_MLPERF_SUBMISSION_CHECKER_EXTRA_ARGS', ''))),
                             host_bounds=bounds)
    except SubmissionError as e:
        state[records.CHECKER] = records.to_state(records.CheckerVerdict(
            version, 'NOT RUN', reason=str(e)))
        return {'return': 1, 'error': f'run-mlperf-inference-submission-checker: {e}'}
    log = os.path.join(os.getcwd(), 'submission_checker.log')
    with open(log, 'w', encoding='utf-8') as f:
        f.write(report.output)
    print(format_report(report))
    print(f'full checker output: {log}')
    state[records.CHECKER] = records.to_state(checker_verdict(report, log))
    env['CM_MLPERF_SUBMISSION_CHECKER_LOG'] = log
    env['CM_MLPERF_SUBMISSION_CHECKER_FULL_LENGTH_CHECKS'] = ','.join(report.full_length_checks)
    env['CM_MLPERF_SUBMISSION_CHECKER_VERDICT'] = (
        'fail-host-limit' if report.only_host_limited else 'fail' if not report.passed
        else 'pass' if report.returncode == 0 else 'pass-test-mode')
    if report.only_host_limited:
        return {'return': 1, 'error': 'run-mlperf-inference-submission-checker: FAIL on this host\'s speed alone: '
                + '; '.join(report.host_limits) + f'; every other check passed (full output: {log})'}
    if not report.passed:
        problems = [f.message for f in report.errors] + [f'pre-check: {f.path}: {f.message}' for f in report.precheck]
        return {'return': 1, 'error': 'run-mlperf-inference-submission-checker: the official checker and our '
                f'pre-check found {len(problems)} error(s): ' + '; '.join(problems[:5]) + f' (full output: {log})'}
    return {'return': 0}
