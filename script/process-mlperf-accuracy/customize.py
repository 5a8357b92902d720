"""Thin hooks: env -> AccuracyRequest -> mlperf_llm.accuracy.process -> env/state (docs/accuracy.md)."""
import os


def preprocess(i):
    from mlperf_llm.accuracy.evaluate import EvaluationError
    from mlperf_llm.accuracy.log import AccuracyLogError
    from mlperf_llm import outcomes as records
    from mlperf_llm.accuracy.pipelines import pipeline_for
    from mlperf_llm.accuracy.process import (AccuracyRequest, accuracy_dirs, accuracy_verdict, describe,
                                             process_accuracy)
    from mlperf_llm.accuracy.splitter import SplitterError
    from mlperf_llm.accuracy.targets import TargetError

    env, state = i['env'], i['state']
    model = env['CM_MLPERF_MODEL']
    try:
        pipeline = pipeline_for(model)
    except EvaluationError as e:
        return {'return': 1, 'error': str(e)}
    asked = env.get('CM_MLPERF_ACCURACY_DATASET', '')
    if asked and asked != pipeline.name:
        return {'return': 1, 'error': f'{model} is scored on its {pipeline.name} data set, not {asked}: '
                f'use the variation _{pipeline.name} or none'}
    if env.get('CM_MLPERF_ACCURACY_RESULTS_DIR'):
        dirs = [env['CM_MLPERF_ACCURACY_RESULTS_DIR']]
    elif env.get('CM_MLPERF_RESULTS_DIR'):
        dirs = accuracy_dirs(env['CM_MLPERF_RESULTS_DIR'], model)
    else:
        return {'return': 1, 'error': 'no accuracy run given: pass '
                '--result_dir=<.../accuracy> or --results_dir=<harness results folder>'}
    dataset = env.get('CM_DATASET_PREPROCESSED_PATH', '')
    tokenizer = env.get('CM_MLPERF_ACCURACY_TOKENIZER_PATH') or env.get('CM_ML_MODEL_PATH', '')
    if not dataset or not tokenizer:
        return {'return': 1, 'error': 'the data set and the tokenizer of the run are needed: pass '
                f'--dataset_path=<{pipeline.data_set}> and --tokenizer_path=<model folder>'}
    # a reasoning benchmark's stand-in has no reference answers of its own: judged by the checker's targets
    embedded = env['CM_MLPERF_ACCURACY_TARGETS'] == 'embedded' and pipeline.reference_rows is not None
    if embedded and not env.get('CM_DATASET_REFERENCE_FILE'):
        return {'return': 1, 'error': '_embedded targets need the embedded data '
                "set's reference.json: pass --embedded_reference=FILE (the _embedded data set step sets it)"}
    workers = env.get('CM_MLPERF_ACCURACY_WORKERS', '')
    req = AccuracyRequest(directories=dirs, dataset=dataset, tokenizer=tokenizer, model=model,
                          dtype=env['CM_MLPERF_ACCURACY_DTYPE'],
                          workers=int(workers) if workers.isdigit() and int(workers) > 0 else None,
                          sentence_splitter=env['CM_MLPERF_ACCURACY_SENTENCE_SPLITTER'],
                          embedded_reference=env['CM_DATASET_REFERENCE_FILE'] if embedded else '',
                          tests=env.get('CM_DATASET_LCB_TESTS', ''))
    try:
        outcomes = process_accuracy(req)
    except (EvaluationError, AccuracyLogError, SplitterError, TargetError) as e:
        return {'return': 1, 'error': str(e)}
    for o in outcomes:
        print('\n'.join(describe(o)))
    env['CM_MLPERF_ACCURACY_PASSED'] = 'yes' if all(o.passed for o in outcomes) else 'no'
    env['CM_MLPERF_ACCURACY_FILES'] = ','.join(os.path.join(o.directory, 'accuracy.json') for o in outcomes)
    state[records.ACCURACY] = records.to_state([accuracy_verdict(o) for o in outcomes])
    return {'return': 0}
