"""run-mlperf-inference-app: the one command. Checks the inputs before anything runs, and prints
the summary at the end; every step is a dependency of its own (see _cm.yaml)."""
import os
import sys

from mlperf_llm import runapp


def validate(i):
    problems = runapp.check_inputs(i['env'])
    if problems:
        return {'return': 1, 'error': 'bad input:\n  - ' + '\n  - '.join(problems)}
    # the round and the benchmark: refused, settled (none given), or as given; and what follows from them
    result = runapp.settle_for_benchmark(i['env'], i['input'])
    settles = result.get('variations') or any(i['env'].get(k) != v for k, v in (result.get('env') or {}).items())
    notice = runapp.submitter_notice(i['env'])
    if notice and not settles and result['return'] == 0:   # once: a settled run is planned again
        print(notice, file=sys.stderr)           # on stderr: a plan or -j JSON on stdout stays as it is
    return result


def preview(i):
    """--dry-run: on a node with GPUs, the vLLM layout the run would choose there (vllm/layout.py)."""
    return {'return': 0, 'text': runapp.gpu_preview(i['env'])}


def preprocess(i):
    """After the benchmark steps, before the submission: write how this run was made
    (results_dir/cm4mlperf-record.json; the submission step copies it into every measurement folder)."""
    from mlperf_llm.containers import chain
    from mlperf_llm.reproduce import capture, record
    env = i['env']
    if chain.runs_in_image(env):                  # --docker=chain: the chain in the image wrote it
        return {'return': 0}
    results = env.get('CM_MLPERF_RESULTS_DIR', '')
    if results and os.path.isdir(results):
        path = record.write(capture.this_run(chain.as_requested(i)), os.path.join(results, record.RESULTS_RECORD))
        print(f'reproduction record: {path}')
        facts = record.keep_image_facts(env, results)
        if facts:
            print(f'the image it ran in (its facts): {facts}')
    return {'return': 0}


def postprocess(i):
    from mlperf_llm.containers import chain
    if chain.runs_in_image(i['env']):            # its summary was printed by the chain in the image
        print(f"--docker=chain: the run above ran in image {i['env'].get(chain.CHAIN_IMAGE_ENV, '?')}; results in "
              f"{i['env'].get('CM_MLPERF_RESULTS_DIR', '?')}, submission in {i['env'].get('CM_MLPERF_SUBMISSION_DIR', '?')}")
        return {'return': 0}
    print(runapp.summary(i['env'], i['state']))
    return {'return': 0}
