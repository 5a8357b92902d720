"""run-mlperf-inference-in-image: --docker=chain's run of the whole chain in the run's image. The work
is in mlperf_llm.containers.chain."""
import os


def preprocess(i):
    from mlperf_llm.containers import chain
    from mlperf_llm.sysinfo import envlock
    env = i['env']
    try:
        env[envlock.LOADGEN_LOCK_ENV] = chain.loadgen_pin(env)   # build-mlperf-image's loadgen venv, by hash
    except chain.ChainError as e:
        return {'return': 1, 'error': str(e)}
    results = env.get('CM_MLPERF_RESULTS_DIR') or os.path.join(env.get('CM_RUN_CWD') or os.getcwd(), 'mlperf_results')
    os.makedirs(results, exist_ok=True)
    env['CM_MLPERF_IMAGE_FACTS'] = os.path.join(os.getcwd(), 'cm4mlperf-image.json')
    return {'return': 0}


def postprocess(i):
    from cmcontract.places import cache_root
    from mlperf_llm.containers import chain, engine
    from mlperf_llm.sysinfo import envlock
    from mlperf_llm.sysinfo.probe import collect
    from mlperf_llm.sysinfo.sut import host_view
    env = i['env']
    try:
        eng = engine.Engine.from_json(env['CM_MLPERF_IMAGE_ENGINE'])
        run = chain.plan(i.get('request') or {}, env, env['CM_MLPERF_IMAGE_TAG'], env['CM_MLPERF_IMAGE_ID'],
                         env[envlock.LOADGEN_LOCK_ENV], os.path.join(cache_root(), 'containers'),
                         host_view=host_view(collect(accelerators=False)))
    except (chain.ChainError, engine.ContainerError) as e:
        return {'return': 1, 'error': str(e)}
    print(run.describe(), flush=True)
    rc = chain.run(eng, run)
    if rc != 0:
        return {'return': 1, 'error': f'the chain in image {env["CM_MLPERF_IMAGE_TAG"]} exited with status {rc} (its '
                'output is above); the container is gone. Its CM home and cache stay in ' + run.home}
    env['CM_MLPERF_CHAIN_IMAGE'] = env['CM_MLPERF_IMAGE_TAG']
    print(f'the chain ran in image {env["CM_MLPERF_IMAGE_TAG"]} (ID {env["CM_MLPERF_IMAGE_ID"][:19]}); the container '
          'is gone')
    return {'return': 0}
