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
    results = env.get('CM_MLPERF_RESULTS_DIR') or os.path.join(run_cwd(env), 'mlperf_results')
    os.makedirs(results, exist_ok=True)
    env[image.FACTS_ENV] = os.path.join(os.getcwd(), IMAGE_FACTS_NAME)
    return {'return': 0}


def postprocess(i):
    from cmcontract.places import cache_root
    from mlperf_llm.containers import chain, engine, image
    from mlperf_llm.sysinfo import envlock
    from mlperf_llm.sysinfo.probe import collect
    from mlperf_llm.sysinfo.sut import host_view
    env = i['env']
    try:
        eng = engine.Engine.from_json(env[image.ENGINE_ENV])
        run = chain.plan(i.get('request') or {}, env, env[image.TAG_ENV], env[image.ID_ENV],
                         env[envlock.LOADGEN_LOCK_ENV], os.path.join(cache_root(), 'containers'),
                         host_view=host_view(collect(accelerators=False)))
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
