"""run-mlperf-inference-in-image: --docker=chain's run of the whole chain in the run's image. The work
is in mlperf_llm.containers.chain."""
import os

from cmcontract.places import run_cwd


def preprocess(i):
    from mlperf_llm.containers import chain, image
    from mlperf_llm.submission.spec import IMAGE_FACTS_NAME
    from mlperf_llm.sysinfo import envlock
    env = i['env']
    try:
        env[envlock.LOADGEN_LOCK_ENV] = chain.loadgen_pin(env)   # build-mlperf-image's loadgen venv, by hash
    except chain.ChainError as e:
        return {'return': 1, 'error': str(e)}
    _test06_loadgen(env)
    results = env.get('CM_MLPERF_RESULTS_DIR') or os.path.join(run_cwd(env), 'mlperf_results')
    os.makedirs(results, exist_ok=True)
    env[image.FACTS_ENV] = os.path.join(os.getcwd(), IMAGE_FACTS_NAME)
    return {'return': 0}


def _test06_loadgen(env):
    """TEST06 on a round whose LoadGen wheel cannot run it (v4.1): LoadGen is built from the source
    here, by this interpreter, for the chain in the image (which has no compiler)."""
    import sys
    from cmcontract.yesno import is_yes
    from mlperf_llm.sysinfo.loadgen_src import HOST_BUILD_ENV, HOST_PROBLEM_ENV, build_on_host, builds_store
    tests = [t.strip() for t in env.get('CM_MLPERF_COMPLIANCE_TESTS', '').split(',')]
    if not (is_yes(env.get('CM_MLPERF_RUN_COMPLIANCE')) and 'TEST06' in tests):
        return
    source = env.get('CM_MLPERF_INFERENCE_SOURCE', '')
    built, problem = build_on_host(env.get('CM_LOADGEN_VERSION', ''), source, sys.executable, builds_store())
    env[HOST_BUILD_ENV], env[HOST_PROBLEM_ENV] = built, problem
    if built:
        print(f'TEST06: LoadGen built here from {source}/loadgen for the image (it has no compiler): {built}',
              file=sys.stderr)
    elif problem:
        print(f'TEST06: {problem}', file=sys.stderr)


def postprocess(i):
    from cmcontract.places import cache_root
    from mlperf_llm.containers import chain, engine, image
    from mlperf_llm.containers import run as crun
    from mlperf_llm.sysinfo import envlock
    from mlperf_llm.sysinfo.probe import collect
    from mlperf_llm.sysinfo.sut import host_view
    env = i['env']
    try:
        eng = engine.Engine.from_json(env[image.ENGINE_ENV])
        run = chain.plan(i.get('request') or {}, env, env[image.TAG_ENV], env[image.ID_ENV],
                         env[envlock.LOADGEN_LOCK_ENV], os.path.join(cache_root(), 'containers'),
                         host_view=host_view(collect(accelerators=False)))
        crun.check_gpus(run.spec.gpus, eng)
    except (chain.ChainError, engine.ContainerError) as e:
        return {'return': 1, 'error': str(e)}
    print(run.describe(), flush=True)
    rc = chain.run(eng, run)
    if rc != 0:
        return {'return': 1, 'error': f'the chain in image {env[image.TAG_ENV]} exited with status {rc} (its '
                'output is above); the container is gone. Its CM home and cache stay in ' + run.home}
    env[chain.CHAIN_IMAGE_ENV] = env[image.TAG_ENV]
    print(f'the chain ran in image {env[image.TAG_ENV]} (ID {env[image.ID_ENV][:19]}); the container '
          'is gone')
    return {'return': 0}
