"""Thin hooks: the audit.config files of TEST07 and TEST09 (preprocess), their verification (postprocess);
mlperf_llm.accuracy.compliance_run does the work."""
import os

from cmcontract.yesno import is_yes


def preprocess(i):
    from mlperf_llm.accuracy.compliance_run import ComplianceRunError, prepare
    env = i['env']
    if is_yes(env.get('CM_MLPERF_COMPLIANCE_VERIFY_ONLY')):
        return {'return': 0}
    try:
        audit_dir, lines = prepare(env, os.getcwd())
    except ComplianceRunError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_MLPERF_AUDIT_DIR'] = audit_dir
    for line in lines:
        print(line)
    return {'return': 0}


def postprocess(i):
    from mlperf_llm import outcomes as records
    from mlperf_llm.accuracy.compliance_run import ComplianceRunError, verify_all
    env, state = i['env'], i['state']
    try:
        verdicts = verify_all(env)
    except ComplianceRunError as e:
        return {'return': 1, 'error': str(e)}
    for v in verdicts:
        print(f'{v.test} {v.scenario}: {v.status} ({v.directory})')
        for line in v.detail:
            print('  ' + line)
    env['CM_MLPERF_COMPLIANCE_PASSED'] = 'yes' if all(v.status == 'PASS' for v in verdicts) else 'no'
    env['CM_MLPERF_COMPLIANCE_DIRS'] = ','.join(v.directory for v in verdicts)
    state[records.COMPLIANCE] = records.to_state(verdicts)
    return {'return': 0}
