"""get-mlperf-inference-loadgen: the mlcommons-loadgen wheel whose built-in mlperf.conf has the round's
seeds (the range of each round is in mlperf_llm.rounds; --version, --version_min, --version_max narrow
it; without a round, the newest round), installed into this step's cache entry (site/) rather than into the
interpreter's environment: a run of one round never replaces the LoadGen of another round or the
user's own. The harness puts CM_LOADGEN_PYTHONPATH first on PYTHONPATH. The wheel is then checked:
the seed it applies for llama2-70b must be the round's, or the checker would reject every result.

`_test06` (the TEST06 run's LoadGen): where the round's wheel ignores audit.config's sampling (v4.1),
LoadGen is built from the inference source at hand (CM_MLPERF_INFERENCE_SOURCE) into site-src/
(mlperf_llm.sysinfo.loadgen_src), seed-checked like the wheel; each source file it compiled is
re-checked on reuse. Where it cannot be built (no source, no compiler, a failed build), the wheel
stays, CM_LOADGEN_TEST06_PROBLEM says why and the fix, and the entry is not kept. In --docker=chain's
image, which has no compiler, the host's build of the same files for the same Python ABI
(CM_LOADGEN_HOST_BUILD, mlperf_llm.containers.chain) is copied instead.

--env.CM_LOADGEN_LOCK (a replay's: the recorded wheel's `mlcommons-loadgen==V --hash=sha256:H`)
installs exactly that archive, by its hash; CM_LOADGEN_SHA256 is the sha256 of the wheel installed
(from the site folder's lock), which the run's record keeps. With it, --env.CM_LOADGEN_SITE=VENV (the
run's image, `--docker=chain`: its `loadgen` venv, installed from that pin by its hash) is used as it
is: nothing is installed, the version it holds must be the pin's."""
import os
import sys

from cmcontract.yesno import is_yes

from mlperf_llm.sysinfo import envlock
from mlperf_llm.sysinfo.pyenv import PackageRequest, PyEnvError, installed_version, pip_install_into
from mlperf_llm.rounds import RoundError, round_for
from mlperf_llm.sysinfo.rounds import loadgen_seed


def validate(i):
    """The round: refused when unknown or without the model; none given (top step): the newest round
    that has the model, planned as if asked for (mlperf_llm.rounds)."""
    from mlperf_llm.rounds import validate_hook_result
    return validate_hook_result(i['env'])


def preprocess(i):
    env = i['env']
    try:
        rnd = round_for(env.get('CM_MLPERF_INFERENCE_VERSION', ''))
        locked = envlock.loadgen_pin(env[envlock.LOADGEN_LOCK_ENV]) if env.get(envlock.LOADGEN_LOCK_ENV) else None
        req = PackageRequest(envlock.LOADGEN_DIST, locked.version if locked else env.get('CM_VERSION', ''),
                             env.get('CM_VERSION_MIN', '') or rnd.loadgen_min,
                             env.get('CM_VERSION_MAX', '') or rnd.loadgen_max)
    except (RoundError, PyEnvError, envlock.LockError) as e:
        return {'return': 1, 'error': str(e)}
    asked = [env.get(k, '') for k in ('CM_VERSION', 'CM_VERSION_MIN', 'CM_VERSION_MAX')]
    for v in asked:
        if v.count('.') >= 2 and not rnd.loadgen_in_range(v):
            return {'return': 1, 'error': f'mlcommons-loadgen {v} was asked for, but round {rnd.version} '
                    f'needs a wheel between {rnd.loadgen_min} .. {rnd.loadgen_max} (the ones carrying its '
                    f'seeds): change --version/--version_min/--version_max (or --adr.loadgen.*)'}
    python = env.get('CM_VENV_PYTHON') or env.get('CM_PYTHON_BIN_WITH_PATH') or sys.executable
    site = os.path.join(i['work_dir'], 'site')
    given = env.get(envlock.LOADGEN_SITE_ENV, '')
    try:
        if given:
            site, version = _given_site(python, given, locked)
        else:
            what = f'{locked.name}=={locked.version} (the recorded wheel, by its sha256)' if locked else req.pip_spec()
            print(f'installing {what} into {site} (for {python}; its own environment is left as it is)', file=sys.stderr)
            version = pip_install_into(python, req, site, locked=locked)
        seed = loadgen_seed(python, site)
    except (PyEnvError, RoundError) as e:
        return {'return': 1, 'error': str(e)}
    if not rnd.loadgen_in_range(version):
        return {'return': 1, 'error': f'mlcommons-loadgen {version} was installed, but round {rnd.version} '
                f'needs {rnd.loadgen_min} .. {rnd.loadgen_max}: check --version/--adr.loadgen.* overrides'}
    if seed != rnd.qsl_rng_seed:
        return {'return': 1, 'error': f'mlcommons-loadgen {version} applies qsl_rng_seed {seed}, but {rnd.version} '
                f'requires {rnd.qsl_rng_seed}: this wheel does not belong to the round; pin another '
                f'wheel between {rnd.loadgen_min} and {rnd.loadgen_max}'}
    env['CM_LOADGEN_VERSION'] = version
    wheel = locked if given else envlock.site_lock(site).get(envlock.LOADGEN_DIST)
    env['CM_LOADGEN_SHA256'] = wheel.sha256 if wheel else ''
    env['CM_LOADGEN_PYTHON'] = python
    env['CM_LOADGEN_PYTHONPATH'] = site
    env['CM_LOADGEN_QSL_RNG_SEED'] = str(seed)
    env['CM_LOADGEN_SEED_CHECK'] = 'ok'
    env['CM_MLPERF_INFERENCE_ROUND'] = rnd.version
    print(f'mlcommons-loadgen {version} for {rnd.version}: qsl_rng_seed {seed} is the round\'s', file=sys.stderr)
    if is_yes(env.get('CM_LOADGEN_FOR_TEST06')):
        return _for_test06(i, rnd, python, version)
    return {'return': 0}


def _given_site(python, venv, locked):
    """(site folder, version) of a venv that already holds the pinned wheel (the image's); PyEnvError
    when it is not one, or holds another version."""
    import glob
    if locked is None:
        raise PyEnvError(f'--env.{envlock.LOADGEN_SITE_ENV}={venv}: give the wheel it holds too, --env.{envlock.LOADGEN_LOCK_ENV}='
                         f'"{envlock.LOADGEN_DIST}==VERSION --hash=sha256:..." (the image was built from it)')
    sites = sorted(glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages')))
    version = installed_version(python, envlock.LOADGEN_DIST, sites[0]) if sites else ''
    if version != locked.version:
        raise PyEnvError(f'--env.{envlock.LOADGEN_SITE_ENV}={venv} holds {envlock.LOADGEN_DIST} {version or "(none)"}, not the '
                         f'pinned {locked.version}: it is not the venv the image installed from that pin')
    print(f'{envlock.LOADGEN_DIST} {version} from {sites[0]} (installed by its sha256 when the image was built; '
          'nothing installed now)', file=sys.stderr)
    return sites[0], version


def _for_test06(i, rnd, python, wheel_version):
    from mlperf_llm.sysinfo.loadgen_src import (HOST_BUILD_ENV, HOST_PROBLEM_ENV, LoadgenBuildError,
                                                build_for_round, builds_store, for_test06, wheel_problem)

    env = i['env']
    env['CM_LOADGEN_SOURCE'] = env['CM_LOADGEN_SOURCE_DIGEST'] = env['CM_LOADGEN_TEST06_PROBLEM'] = ''
    given = env.get(HOST_BUILD_ENV, '')        # --docker=chain: the host's build; the image has no compiler
    choice = for_test06(wheel_version, env.get('CM_MLPERF_INFERENCE_SOURCE', ''), python, given=given,
                        host_problem=env.get(HOST_PROBLEM_ENV, ''))
    problem = choice.problem
    if choice.source:
        src = choice.source
        site = os.path.join(i['work_dir'], 'site-src')
        how = 'from the host\'s build' if given else 'about a minute, unless built before'
        print(f'TEST06: building LoadGen from {src.loadgen_dir} into {site} (the {wheel_version} wheel ignores '
              f'audit.config\'s sampling; {how})', file=sys.stderr)
        try:
            built = build_for_round(python, src, site, rnd, store=builds_store(),
                                    say=lambda m: print(f'TEST06: {m}', file=sys.stderr), given=given)
        except LoadgenBuildError as e:
            problem = f'{wheel_problem(wheel_version)}; {e}'
        else:
            env['CM_LOADGEN_VERSION'] = built.version
            env['CM_LOADGEN_PYTHONPATH'] = built.site
            env['CM_LOADGEN_QSL_RNG_SEED'] = str(built.qsl_rng_seed)
            env['CM_LOADGEN_SOURCE'] = src.loadgen_dir
            env['CM_LOADGEN_SOURCE_DIGEST'] = src.digest
            for n, path in enumerate(src.paths()):     # cache_recheck_env: an edited source is built again
                env[f'CM_TMP_LOADGEN_SOURCE_FILE_{n}'] = path
            print(f'TEST06: LoadGen {built.version} built from {src.loadgen_dir} (sha256 {src.digest[:12]}), '
                  f'qsl_rng_seed {built.qsl_rng_seed} with {built.conf or "its own mlperf.conf"}', file=sys.stderr)
            return {'return': 0}
    if not problem:
        return {'return': 0}
    env['CM_LOADGEN_TEST06_PROBLEM'] = problem
    print(f'TEST06: {problem}', file=sys.stderr)
    return {'return': 0, 'cache': False,
            'reason': 'TEST06 keeps a wheel that cannot run it: a later run tries to build LoadGen again'}
