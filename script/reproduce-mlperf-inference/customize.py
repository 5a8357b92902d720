"""reproduce-mlperf-inference: replay a submission's recorded run here and compare (docs/reproduce.md).
The work is in mlperf_llm.reproduce.replay; the recorded chain runs through the engine (i['run_script'])."""
import os

from cmcontract.yesno import is_yes


def validate(i):
    if not i['env'].get('CM_REPRODUCE_FROM'):
        return {'return': 1, 'error': 'no submission to replay: pass --from=PATH (a submission folder or '
                                      'its tarball, mlperf_submission_<submitter>.tar.gz)'}
    return {'return': 0}


def preview(i):
    """--dry-run: for a published folder without a reproduction record, the replay plan read from its
    files (mlperf_llm.published); nothing for a submission with a record."""
    from mlperf_llm.reproduce.replay import published_plan
    from mlperf_llm.reproduce.source import SourceError
    try:
        return {'return': 0, 'text': published_plan(i['env']['CM_REPRODUCE_FROM'], i['work_dir'])}
    except SourceError as e:
        return {'return': 1, 'error': str(e)}


def preprocess(i):
    from mlperf_llm.containers.chain import docker_mode
    from mlperf_llm.reproduce.record import RecordError
    from mlperf_llm.reproduce.runenv import RunEnvError, check_choice
    from mlperf_llm.reproduce.replay import Options, ReplayError, compare_only, rehearse, reproduce
    from mlperf_llm.reproduce.source import SourceError

    env = i['env']
    try:
        limits = _limits(env)
        docker = docker_mode(env.get('CM_REPRODUCE_DOCKER'))    # '': as the recorded run was
        run_env = check_choice(env.get('CM_REPRODUCE_RUN_ENV', ''))
        model_env = check_choice(env.get('CM_REPRODUCE_MODEL_ENV', ''), 'model_env')
    except (ValueError, RunEnvError) as e:
        return {'return': 1, 'error': str(e)}
    opts = Options(source=env['CM_REPRODUCE_FROM'], results_dir=os.path.abspath(env['CM_REPRODUCE_RESULTS_DIR']),
                   work_dir=i['work_dir'],
                   allow_device_change=is_yes(env.get('CM_REPRODUCE_ALLOW_DEVICE_CHANGE')),
                   inference_src=env.get('CM_REPRODUCE_INFERENCE_SRC', ''),
                   compare_to=env.get('CM_REPRODUCE_COMPARE_TO', ''),
                   stand_in=env.get('CM_REPRODUCE_STAND_IN', ''),
                   size_anew=is_yes(env.get('CM_REPRODUCE_SIZE_ANEW')),
                   trust_record=is_yes(env.get('CM_REPRODUCE_TRUST_RECORD')), limits=limits,
                   docker=docker, image_archive=env.get('CM_REPRODUCE_IMAGE_ARCHIVE', ''), run_env=run_env,
                   model_env=model_env)
    try:
        if opts.compare_to:
            c = compare_only(opts)
        elif opts.stand_in:
            c = rehearse(opts, i.get('run_script'))
        else:
            c = reproduce(opts, i.get('run_script'))
    except (ReplayError, SourceError, RecordError) as e:
        return {'return': 1, 'error': str(e)}
    env['CM_REPRODUCE_REPORT'] = os.path.join(opts.results_dir, 'reproduction.json')
    env['CM_REPRODUCE_ACCURACY_EQUAL'] = {True: 'yes', False: 'no', None: ''}[c.accuracy_equal]
    i['state']['mlperf_reproduction'] = {'report': env['CM_REPRODUCE_REPORT'],
                                         'accuracy_equal': c.accuracy_equal,
                                         'accuracy_expected_exact': c.accuracy_expected_exact,
                                         'differing_inputs': [d.name for d in c.differences]}
    return {'return': 0}


def _limits(env):
    """--max_archive_gib / --max_archive_members over the defaults (mlperf_llm.untrusted.Limits)."""
    import dataclasses

    from mlperf_llm.untrusted import GIB, Limits
    out = Limits()
    for key, flag, field, scale in (('CM_REPRODUCE_MAX_ARCHIVE_GIB', '--max_archive_gib', 'max_bytes', GIB),
                                    ('CM_REPRODUCE_MAX_ARCHIVE_MEMBERS', '--max_archive_members', 'max_members', 1)):
        raw = str(env.get(key, '')).strip()
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = 0
        if not value > 0:
            raise ValueError(f'{flag}={raw}: give a positive number (the default is {getattr(Limits(), field) / scale:g})')
        out = dataclasses.replace(out, **{field: int(value * scale)})
    return out
