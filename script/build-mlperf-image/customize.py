"""build-mlperf-image: this host's run environment (and vLLM's venv) as a pinned OCI image, or a
recorded image rebuilt and checked by ID (docs/containers.md). The work is in mlperf_llm.containers."""
import os
import sys

from cmcontract.places import cache_root, run_cwd


def preprocess(i):
    from mlperf_llm.containers import engine, image, make, squash
    from mlperf_llm.containers.base import BaseError
    from mlperf_llm.containers.recipe import RecipeError
    from mlperf_llm.containers.wheels import WheelError
    from mlperf_llm.submission.spec import IMAGE_FACTS_NAME
    from mlperf_llm.sysinfo.envlock import LockError

    env = i['env']
    try:
        eng = engine.configured(engine.find(env.get('CM_MLPERF_CONTAINER_ENGINE', '')),
                                os.path.join(cache_root(), 'containers'))
        if env.get('CM_MLPERF_IMAGE_STORE'):
            eng = eng.with_store(os.path.abspath(env['CM_MLPERF_IMAGE_STORE']))
        # --from: the recorded recipe holds every venv's lock; the venvs and locks given beside it (a
        # replay's, for the steps that install) are not read
        venvs, locked = ({}, {}) if env.get(image.REBUILD_ENV) else _venvs(env)
        if env.get(image.LOAD_ENV):
            _load(eng, env)
        built = make.image_for(eng, make.Places(os.path.join(cache_root(), 'containers')), _project_root(env), venvs,
                               mirror=env.get('CM_MLPERF_IMAGE_BASE_MIRROR', ''),
                               recorded_path=env.get(image.REBUILD_ENV, ''), locked=locked)
        facts = os.path.abspath(env.get(image.FACTS_ENV) or
                                os.path.join(run_cwd(env), IMAGE_FACTS_NAME))
        image.write_facts(facts, built)
        print(f'Image {built.tag}\n  ID {built.image_id}\n  facts (recipe, layers, base packages): {facts}')
        if env.get('CM_MLPERF_IMAGE_ARCHIVE'):
            image.save(eng, built.tag, os.path.abspath(env['CM_MLPERF_IMAGE_ARCHIVE']))
            print(f"  archive: {env['CM_MLPERF_IMAGE_ARCHIVE']} ({eng.kind} load -i ...)")
        if env.get('CM_MLPERF_IMAGE_SQUASHFS'):
            out = squash.export(eng, built.tag, os.path.abspath(env['CM_MLPERF_IMAGE_SQUASHFS']),
                                int(built.recipe['base']['source_date_epoch']))
            print(f'  SquashFS: {out} (as any user, with the GPUs: {out}{squash.LAUNCHER_SUFFIX} --work=DIR -- cm ...)')
    except (engine.ContainerError, BaseError, RecipeError, WheelError, LockError) as e:
        return {'return': 1, 'error': str(e)}
    env[image.ID_ENV] = built.image_id
    env[image.TAG_ENV] = built.tag
    env[image.FACTS_ENV] = facts
    env[image.ENGINE_ENV] = eng.to_json()
    return {'return': 0}


def _load(eng, env):
    """--load: an archive someone published, loaded into the store before --from's facts are checked:
    the image found there by the recipe's tag must have the recorded ID (make.image_for), else the
    replay stops, naming it. Loading trusts the archive's maker for what the ID names; without
    --load the image is rebuilt from the recipe, which checks that too."""
    from mlperf_llm.containers import image
    from mlperf_llm.containers.recipe import RecipeError
    archive = os.path.abspath(env[image.LOAD_ENV])
    if not env.get(image.REBUILD_ENV):
        raise RecipeError(f'--load={archive}: an archive is checked against the facts file (cm4mlperf-image.json) '
                          'published with it: give --from=FILE too')
    print(f'Loaded {image.load(eng, archive)} from {archive}')


def _venvs(env):
    """--venvs: (name -> interpreter, name -> lock entries). `run`: the interpreter `cm` runs in, with
    this project, or --run_lock's entries (a record's run environment: nothing installed here), with
    this project; `loadgen`: the LoadGen wheel CM_LOADGEN_LOCK pins (--docker=chain's); `vllm`: --vllm_lock's entries (a record's lock: nothing installed here), else
    --vllm_python's venv (left out when neither is given, unless it is the only venv asked for)."""
    from mlperf_llm.containers.make import lock_entries
    from mlperf_llm.containers.recipe import RecipeError
    from mlperf_llm.sysinfo import envlock
    wanted = [v.strip() for v in (env.get('CM_MLPERF_IMAGE_VENVS') or 'run,vllm').split(',') if v.strip()]
    unknown = [v for v in wanted if v not in ('run', 'vllm', 'loadgen')]
    if unknown:
        raise RecipeError(f"--venvs={env.get('CM_MLPERF_IMAGE_VENVS')}: {', '.join(unknown)} is not a venv an image "
                          "holds; give run, vllm, loadgen, or several of them (run,loadgen,vllm)")
    if wanted == ['vllm'] and not env.get('CM_VLLM_PYTHON') and not env.get('CM_VLLM_LOCK'):
        raise RecipeError('--venvs=vllm (a server\'s image) needs --vllm_python=PATH (the python of the vLLM to put '
                          'in it) or --vllm_lock=FILE (its lock)')
    venvs = {'run': sys.executable} if 'run' in wanted and not env.get(envlock.RUN_LOCK_ENV) else {}
    locked = {'run': lock_entries(env[envlock.RUN_LOCK_ENV], bare_pins=True)} if 'run' in wanted and not venvs else {}
    if 'loadgen' in wanted:          # the round's wheel, by its hash (get-mlperf-inference-loadgen's)
        if not env.get(envlock.LOADGEN_LOCK_ENV):
            raise RecipeError(f'--venvs=...loadgen needs --env.{envlock.LOADGEN_LOCK_ENV}="{envlock.LOADGEN_DIST}=='
                              'VERSION --hash=sha256:..." (the round\'s wheel that get-mlperf-inference-loadgen installed)')
        locked['loadgen'] = [envlock.loadgen_pin(env[envlock.LOADGEN_LOCK_ENV])]
    if 'vllm' in wanted and env.get('CM_VLLM_LOCK'):
        locked['vllm'] = lock_entries(env['CM_VLLM_LOCK'])
    elif 'vllm' in wanted and env.get('CM_VLLM_PYTHON'):
        venvs['vllm'] = env['CM_VLLM_PYTHON']
    return venvs, locked


def _project_root(env):
    """The project's checkout: as given, else this running copy when it is one, else the folder the
    command was run in."""
    if env.get('CM_MLPERF_IMAGE_PROJECT_SRC'):
        return os.path.abspath(env['CM_MLPERF_IMAGE_PROJECT_SRC'])
    import mlperf_llm
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(mlperf_llm.__file__))))
    if os.path.isfile(os.path.join(here, 'setup.py')):
        return here
    return run_cwd(env)
