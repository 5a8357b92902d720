"""Thin hooks: CM env -> BuildRequest -> mlperf_llm.submission.tree.build_submission (docs/submission.md)."""
import os

from cmcontract.yesno import is_yes


def preprocess(i):
    from mlperf_llm import outcomes as records
    from mlperf_llm.submission.cmenv import metadata_from_env, submission_outcome, sut_desc_path
    from mlperf_llm.submission.errors import SubmissionError
    from mlperf_llm.submission.tarball import pack
    from mlperf_llm.submission.tree import BuildRequest, build_submission

    env, state = i['env'], i['state']
    results = env.get('CM_MLPERF_RESULTS_DIR', '')
    if not results:
        return {'return': 1, 'error': 'generate-mlperf-inference-submission: no results folder: pass '
                '--results_dir=DIR (the folder the benchmark wrote: <model>/<Scenario>/performance/run_1)'}
    target = env.get('CM_MLPERF_SUBMISSION_DIR') or os.path.join(
        os.path.dirname(os.path.abspath(results)), 'mlperf_submission')
    try:
        meta = metadata_from_env(env)
        if not meta.step_cache_keys:   # the steps of this run and the cache entries they used
            meta.step_cache_keys = {s['script']: s['key'] for s in i.get('steps', [])}
        report = build_submission(BuildRequest(
            results_dir=results, system_json=sut_desc_path(env), metadata=meta, submission_dir=target,
            inference_src=env.get('CM_MLPERF_INFERENCE_SOURCE') or None,
            clean=is_yes(env.get('CM_MLPERF_SUBMISSION_CLEAN'))))
        tarball = pack(report.submission_dir, meta.submitter) \
            if is_yes(env.get('CM_MLPERF_SUBMISSION_TAR', 'yes')) else None
    except (SubmissionError, OSError) as e:
        return {'return': 1, 'error': f'generate-mlperf-inference-submission: {e}'}
    for w in report.warnings:
        print(f'warning: {w}')
    for r in report.results:
        print(f'{r.model} {r.scenario}: {r.value:.6g} {r.unit}, LoadGen {"VALID" if r.valid else "INVALID"}; '
              f'{r.accuracy_text(", ")}')
    print(f'submission tree: {report.submission_dir} ({report.files} files)\nsummary page: {report.summary_html}')
    env['CM_MLPERF_SUBMISSION_DIR'] = report.submission_dir
    env['CM_MLPERF_SUBMISSION_SUMMARY_HTML'] = report.summary_html
    env['CM_MLPERF_SUBMISSION_SUBMITTER'] = meta.submitter
    env['CM_MLPERF_SUBMISSION_ROUND'] = meta.round
    if tarball:
        print(f'tarball: {tarball.path} (sha1 {tarball.sha1})')
        env['CM_MLPERF_SUBMISSION_TARBALL'] = tarball.path
        env['CM_MLPERF_SUBMISSION_TARBALL_SHA1'] = tarball.sha1
    state[records.SUBMISSION] = records.to_state(submission_outcome(report, meta, tarball))
    return {'return': 0}
