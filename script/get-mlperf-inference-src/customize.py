"""get-mlperf-inference-src: a shallow clone of mlcommons/inference at the round's tag (_r5.1 -> v5.1),
or the checkout given with --src_path=DIR (checked, not copied; a tag other than the round's is
reported). The entry is cached: after moving your own checkout to another commit, pass --renew."""
import os
import sys

from mlperf_llm.sysinfo.inference_src import InferenceSrcError, clone_at_tag, describe


def preprocess(i):
    env = i['env']
    tag = env.get('CM_GIT_CHECKOUT_BRANCH') or env.get('CM_GIT_CHECKOUT_TAG', 'v5.1')
    try:
        if env.get('CM_MLPERF_INFERENCE_SRC_PATH'):
            src = describe(env['CM_MLPERF_INFERENCE_SRC_PATH'])
            if src.tag != tag:
                at = src.tag or src.commit[:12] or 'an unknown commit'
                print(f'note: {src.path} is at {at}, not {tag}', file=sys.stderr)
        else:
            src = clone_at_tag(env['CM_GIT_URL'], tag, os.path.join(os.getcwd(), 'inference'))
    except InferenceSrcError as e:
        return {'return': 1, 'error': str(e)}
    env['CM_MLPERF_INFERENCE_SOURCE'] = src.path
    env['CM_MLPERF_INFERENCE_SOURCE_TAG'] = src.tag
    env['CM_MLPERF_INFERENCE_SOURCE_COMMIT'] = src.commit
    env['CM_MLPERF_INFERENCE_CHECKER'] = src.checker
    env['CM_MLPERF_INFERENCE_MLPERF_CONF'] = src.mlperf_conf
    env['CM_MLPERF_INFERENCE_LLAMA2_PATH'] = src.llama2_dir
    print(f'mlcommons/inference {src.tag or src.commit[:12] or "(not a git checkout)"} at {src.path}',
          file=sys.stderr)
    return {'return': 0}
