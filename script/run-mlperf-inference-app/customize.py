"""run-mlperf-inference-app: the one command. Checks the inputs before anything runs, and prints
the summary at the end; every step is a dependency of its own (see _cm.yaml)."""
from mlperf_llm import runapp


def validate(i):
    problems = runapp.check_inputs(i['env'])
    if problems:
        return {'return': 1, 'error': 'bad input:\n  - ' + '\n  - '.join(problems)}
    from mlperf_llm.rounds import validate_hook_result
    return validate_hook_result(i['env'])     # the round: refused, settled (none given), or as given


def postprocess(i):
    print(runapp.summary(i['env'], i['state']))
    return {'return': 0}
