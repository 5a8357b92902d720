"""get-mlperf-inference-src: a shallow clone of mlcommons/inference at the round's tag or commit
(mlperf_llm.rounds: _r5.1 -> v5.1, _r6.0/_r6.1 -> master b66003e; _tag.X -> X),
or the checkout given with --src_path=DIR (checked, not copied; a tag other than the round's is
reported). A fork or branch asked for (_repo.URL, _branch.NAME) is cloned first; where it cannot be,
the run says so and goes on with --src_path or the official repository (that fallback is not
cached: the next run tries the override again). The entry is cached: after moving your own checkout
to another commit, pass --renew."""
import os
import sys

from mlperf_llm.rounds import RoundError, round_for
from mlperf_llm.sysinfo.inference_src import InferenceSrcError, get_source


def validate(i):
    """The round: refused when unknown or without the model; none given (top step): the newest round
    that has the model, planned as if asked for (mlperf_llm.rounds)."""
    from mlperf_llm.rounds import validate_hook_result
    if i['env'].get('CM_GIT_CHECKOUT_TAG'):      # _tag.X: that revision, whatever the round
        return {'return': 0}
    return validate_hook_result(i['env'])


def preprocess(i):
    env = i['env']
    try:
        round_tag = env.get('CM_GIT_CHECKOUT_TAG') or round_for(
            env.get('CM_MLPERF_INFERENCE_VERSION', '')).src_ref
        chosen = get_source(env['CM_GIT_URL'], env.get('CM_GIT_CHECKOUT_BRANCH') or round_tag,
                            os.path.join(os.getcwd(), 'inference'),
                            src_path=env.get('CM_MLPERF_INFERENCE_SRC_PATH', ''), round_tag=round_tag)
    except (InferenceSrcError, RoundError) as e:
        return {'return': 1, 'error': str(e)}
    for note in chosen.notes:
        print(f'note: {note}', file=sys.stderr)
    src = chosen.source
    env['CM_MLPERF_INFERENCE_SOURCE'] = src.path
    env['CM_MLPERF_INFERENCE_SOURCE_TAG'] = src.tag
    env['CM_MLPERF_INFERENCE_SOURCE_COMMIT'] = src.commit
    env['CM_MLPERF_INFERENCE_CHECKER'] = src.checker
    env['CM_MLPERF_INFERENCE_MLPERF_CONF'] = src.mlperf_conf
    env['CM_MLPERF_INFERENCE_LLAMA2_PATH'] = src.llama2_dir
    print(f'mlcommons/inference {src.tag or src.commit[:12] or "(not a git checkout)"} at {src.path}',
          file=sys.stderr)
    if chosen.fallback:     # not cached: a later run tries the override again
        return {'return': 0, 'cache': False, 'reason': 'a fallback for an override that could not be cloned'}
    return {'return': 0}
