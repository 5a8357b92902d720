"""What the run-vllm-server step does, as two calls on its env: start (or vet) servers, and stop them.

start_from_env(): with `--api_server=URL[,URL...]` (CM_VLLM_API_SERVERS) it only checks that each serves the
expected model; otherwise it builds the command (inputs + tuning for this machine), starts the server
with its log and a JSON record in the work dir, and waits until it is ready. It returns the env keys the
benchmark reads (CM_VLLM_SERVER_URL, CM_VLLM_SERVER_MODEL_NAME, ...).
stop_from_env(): what the benchmark step calls when it is done; keeps the server with --keep_server.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from cmcontract.secret import is_secret

from ..raycluster import placement as ray_placement
from . import layout, memory, records, replicas, server, tuning
from .command import (NO_USAGE_STATS, ServeConfig, ServeConfigError, api_server_argv, devices_per_server,
                      ray_guidance, redact, server_env, shell_command)
from .inputs import VLLM_KEY_ENV, api_key_of, config_from_env, parse_bool, run_options_from_env

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 8000          # the port a printed command shows when none is chosen (vLLM's own default)


def expected_name(cfg: ServeConfig) -> str:
    return cfg.served_model_name or cfg.model


def _workload(env: dict, cfg: ServeConfig) -> tuning.Workload:
    text = env.get('CM_VLLM_EXPECTED_CONCURRENCY') or '64'
    try:
        concurrency = int(text)
    except ValueError:
        raise server.ServerError(f'CM_VLLM_EXPECTED_CONCURRENCY={text!r} is not an integer') from None
    ranks = devices_per_server(cfg)
    return tuning.Workload(concurrency=concurrency, max_model_len=cfg.max_model_len, dtype=cfg.dtype,
                           single_process_ok=ranks == 1 and not cfg.distributed_executor_backend,
                           ranks=ranks,
                           threads_bind=env.get('VLLM_CPU_OMP_THREADS_BIND') or os.environ.get('VLLM_CPU_OMP_THREADS_BIND'))


def kv_cache_space(env: dict) -> str | None:
    """--kv_cache_space=GiB (CM_VLLM_KV_CACHE_SPACE): the KV cache size asked for, as VLLM_CPU_KVCACHE_SPACE."""
    text = (env.get('CM_VLLM_KV_CACHE_SPACE') or '').strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ServeConfigError(f'kv_cache_space={text!r} is not a whole number of GiB >= 1; e.g. --kv_cache_space=4 '
                               '(leave it out to size the KV cache from the memory of the NUMA node vLLM uses)')
    return text


# vllm-cpu 0.32.0: its CPU platform leaves ray_device_key empty, and vLLM's Ray executor then stops
# with "current platform cpu does not support ray" (vllm/v1/executor/ray_utils.py), after its start
CPU_HAS_NO_RAY = ('--distributed_executor_backend=ray: vLLM cannot run one server across Ray nodes on CPUs '
                  '(vllm-cpu 0.32.0\'s CPU platform has no Ray device: its Ray executor stops with "current '
                  'platform cpu does not support ray"). On CPUs, drop it: --ray_address=HOST:PORT (or '
                  '--ray_start=head) places one replica of the server on each Ray node and the harness '
                  'balances across them; --replicas=N runs several on this machine')


def ray_replicas_address(env: dict) -> str | None:
    """The Ray cluster whose nodes each get a replica: on CPUs, the one --ray_address names or the
    step run-ray-node started or joined (CM_RAY_ADDRESS); None otherwise (on GPUs --ray_address is
    the cluster one server spans, with --distributed_executor_backend=ray)."""
    address = env.get('CM_VLLM_RAY_ADDRESS') or env.get('CM_RAY_ADDRESS') or ''
    if not address or not machine_is_cpu(env) or env.get('CM_VLLM_DISTRIBUTED_EXECUTOR_BACKEND') == 'ray':
        return None
    return address


def prepare(env: dict, log: Callable[[str], None] = print, tune: bool = True,
            machine: tuning.Machine | None = None) -> tuple[list[str], dict, ServeConfig]:
    """(argv, process env additions, final config) for env; prints the tuned settings.
    tune=False only checks the inputs (no machine detection: it samples CPU use for 0.5 s, and the
    start measures the machine again anyway); machine: the share of it the server runs on (a
    replica's: replicas.share), else detected."""
    if ray_replicas_address(env):      # the cluster each replica's node is in, not a flag of vLLM's
        env = {**env, 'CM_VLLM_RAY_ADDRESS': ''}
    # the key: --api_key, else an exported VLLM_API_KEY, given to every server (a Ray replica's, one in an
    # image) as it is to one started here, which inherits it
    cfg = config_from_env(env, api_key=api_key_of(env, os.environ) or None)
    if cfg.host is None or cfg.port is None:
        cfg = replace(cfg, host=cfg.host or DEFAULT_HOST, port=cfg.port or DEFAULT_PORT)
    if cfg.distributed_executor_backend == 'ray' and machine_is_cpu(env):
        raise ServeConfigError(CPU_HAS_NO_RAY)
    added = {}
    asked_kv = kv_cache_space(env)
    if asked_kv and machine_is_cpu(env):
        added['VLLM_CPU_KVCACHE_SPACE'] = asked_kv
    if tune and parse_bool('CM_VLLM_TUNE', env.get('CM_VLLM_TUNE'), default=True):
        machine = machine or detect(env)
        chosen = tuning.choose(machine, tuning.model_shape(cfg.model), _workload(env, cfg))
        cfg, tuned, notes = tuning.apply(cfg, chosen, {**os.environ, **env, **added})
        added.update(tuned)
        log(tuning.describe(cfg, tuned, chosen, notes))
    if machine_is_cpu(env) and cfg.host in ('127.0.0.1', 'localhost'):
        added.setdefault('VLLM_HOST_IP', '127.0.0.1')
    added.update(server_env(cfg))
    if not parse_bool('CM_VLLM_USAGE_STATS', env.get('CM_VLLM_USAGE_STATS'), default=False):
        added.update(NO_USAGE_STATS)       # recorded with the rest (CM_VLLM_SERVER_ENV_*)
    for line in ray_guidance(cfg):
        log(line)
    python = env.get('CM_VLLM_PYTHON') or 'python3'
    shown = cfg
    if cfg.api_key:   # vLLM reads VLLM_API_KEY: the key stays out of the process list and the printed command
        added[VLLM_KEY_ENV] = cfg.api_key
        shown = replace(cfg, api_key=None)
    return api_server_argv(shown, python, env.get('CM_VLLM_VERSION') or None), added, cfg


def gpu_layout(env: dict) -> layout.Layout | None:
    """The node's layout for the run's benchmark (CM_MLPERF_MODEL; none: sized by the checkpoint's
    weights) where detect-gpu found GPUs and this step starts its own servers on them; None elsewhere
    (CPUs, a CPU build of vLLM, one server spanning a Ray cluster: its size is the user's; --tune=no:
    only what was given)."""
    from ..benchmarks import BENCHMARKS
    node = layout.GpuNode.from_env(env) if served_gpus(env) else None
    if node is None or env.get('CM_VLLM_DISTRIBUTED_EXECUTOR_BACKEND') == 'ray' \
            or not parse_bool('CM_VLLM_TUNE', env.get('CM_VLLM_TUNE'), default=True):
        return None
    bench = BENCHMARKS.get(env.get('CM_MLPERF_MODEL') or '')
    shape = tuning.model_shape(env.get('CM_VLLM_MODEL') or '') if bench is None else None
    return layout.choose(bench, node, env, weights_gb=shape.params * 2 / 1e9 if shape and shape.params else None)


def with_port(env: dict) -> dict:
    """env with the port the run's own server takes. A port given with --port is kept as given (a
    taken one is refused when the server starts). Without one, a port that is free now (the
    kernel's choice), never a fixed one: two runs started together each get their own, and the
    benchmark finds the server through CM_VLLM_SERVER_URL. A port taken between this choice and the
    server's bind is caught when it answers (server.ServerProcess: the process behind the port)."""
    if env.get('CM_VLLM_PORT'):
        return env
    return {**env, 'CM_VLLM_PORT': str(server.free_port(env.get('CM_VLLM_HOST') or DEFAULT_HOST))}


def served_gpus(env: dict) -> int:
    """The GPUs the server runs on: those detect-gpu found (CM_GPU_COUNT), none where the vLLM is a
    CPU build (--device=cpu, or a --vllm_python whose probe said CPU) whatever the machine has."""
    if env.get('CM_VLLM_DEVICE') == 'cpu' or env.get('CM_VLLM_BUILD') == 'cpu':
        return 0
    gpus = str(env.get('CM_GPU_COUNT') or '0')
    return int(gpus) if gpus.isdigit() else 0


def detect(env: dict) -> tuning.Machine:
    return tuning.detect_machine(gpus=served_gpus(env))


def machine_is_cpu(env: dict) -> bool:
    return served_gpus(env) == 0


def start_from_env(env: dict, work_dir: str | Path, log: Callable[[str], None] = print) -> dict:
    opts = run_options_from_env(env)
    api_key = api_key_of(env, os.environ) or None
    if opts.api_servers:
        name = env.get('CM_VLLM_SERVED_MODEL_NAME') or env.get('CM_VLLM_MODEL')
        if not name:
            raise server.ServerError('--api_server needs the model name those servers serve: pass '
                                     '--served_model_name=NAME (or --model)')
        found = server.check_existing(opts.api_servers, name, api_key)
        log(f'using {len(found)} running server(s) serving {name!r}: {", ".join(s.url for s in found)}')
        return {'CM_VLLM_SERVER_URL': ','.join(s.url for s in found), 'CM_VLLM_SERVER_MODEL_NAME': name,
                'CM_VLLM_SERVER_STARTED': 'no'}
    folder = records.records_dir(env)
    records.reconcile(folder, log)      # servers of runs that were killed: stopped, said
    if ray_replicas_address(env):
        return _start_ray_replicas(env, Path(work_dir), opts, folder, log)
    if opts.replicas == 1:
        return _started_env([_start_one(env, Path(work_dir), opts, folder, log)], opts)
    return _start_replicas(env, Path(work_dir), opts, folder, log)


@dataclass(frozen=True)
class _Started:
    proc: server.ServerProcess
    record_path: Path
    log_path: Path
    added: dict
    cfg: ServeConfig
    placement: replicas.Placement | None = None


def _start_one(env: dict, work_dir: Path, opts, folder: Path, log: Callable[[str], None],
               machine: tuning.Machine | None = None, place: replicas.Placement | None = None) -> _Started:
    return _prepared_one(env, work_dir, log, machine, place)(opts, folder, lambda record: None)


def _prepared_one(env: dict, work_dir: Path, log: Callable[[str], None],
                  machine: tuning.Machine | None = None, place: replicas.Placement | None = None):
    """The server's command and settings chosen now (tuning reads the machine before any replica
    starts); returns start(opts, folder, on_start), which starts it and waits until it answers."""
    if place is not None:      # given, so that tuning keeps the replica's binding (and sizes its node)
        env = {**env, **place.env()}
    argv, added, cfg = prepare(with_port(env), log, machine=machine)
    if place is not None:
        added.update(place.env())
    log_path = work_dir / f'vllm-server-{cfg.port}.log'
    record_path = work_dir / f'vllm-server-{cfg.port}.json'

    def start(opts, folder: Path, on_start: Callable[[server.ServerRecord], None]) -> _Started:
        cpus = place.cpus if place is not None else ()
        proc = _start_ready(argv, cfg, added, log_path, opts.start_timeout_s, cfg.api_key,
                            log, _recorder(folder, opts, on_start), cpus=cpus, launch=_image_launch(env, cfg, cpus))
        return _kept(proc, opts, record_path, log_path, added, cfg, place)
    return start


def _image_launch(env: dict, cfg: ServeConfig, cpus: tuple):
    """With --docker (build-mlperf-image's CM_VLLM_IMAGE and its engine): the server started in a
    container of the run's image (containers/served.py); else None, the server a process here."""
    if not env.get('CM_VLLM_IMAGE'):
        return None
    from ..containers import served
    from ..containers.engine import Engine
    return served.launcher(Engine.from_json(env.get('CM_VLLM_IMAGE_ENGINE', '')), env['CM_VLLM_IMAGE'],
                           host=cfg.host, port=cfg.port, model_name=expected_name(cfg),
                           gpus=served.gpu_kind(env.get('CM_GPU_VENDOR', ''), env.get('CM_GPU_COUNT', '')), cpus=cpus)


def _kept(proc: server.ServerProcess, opts, record_path: Path, log_path: Path, added: dict, cfg: ServeConfig,
          place: replicas.Placement | None) -> _Started:
    """A server that answers: its record (with --keep_server) saved beside its log."""
    proc.record = replace(proc.record, keep=opts.keep_server)
    proc.record.save(record_path)
    return _Started(proc, record_path, log_path, added, cfg, place)


def _recorder(folder: Path, opts, on_start: Callable[[server.ServerRecord], None]):
    """on_start for _start_ready: the record saved among the running servers' records, and passed on."""
    def save(record: server.ServerRecord) -> Path:
        on_start(record)
        return records.save(folder, replace(record, keep=opts.keep_server))
    return save


def _start_together(starts: list, opts, folder: Path, env: dict, log: Callable[[str], None]) -> list[_Started]:
    """Every replica started at once, each waited for in a thread of its own: a replica's start is
    mostly imports and loading weights on its own CPUs, GPUs or node, so N replicas are ready in about
    the time of the slowest instead of the sum (one after the other, two Ray replicas on the slow kind
    of host took 49 s each). Their settings were chosen before (_prepared_one, _ray_replica). When one
    fails, or the run is interrupted (Ctrl-C, SIGTERM: raised in this thread), every replica that
    started is stopped, the threads waiting on them end, and the error is raised."""
    launched: dict[int, list[server.ServerRecord]] = {i: [] for i in range(len(starts))}
    lock, stopping = threading.Lock(), threading.Event()

    def noter(i: int) -> Callable[[server.ServerRecord], None]:
        def note(record: server.ServerRecord) -> None:
            with lock:
                launched[i].append(record)
                late = stopping.is_set()
            if late:            # started while the others were being stopped: stopped too, its wait ends
                server.stop(record)
        return note
    pool = ThreadPoolExecutor(max_workers=len(starts), thread_name_prefix='vllm-replica')
    futures = []
    try:
        futures = [pool.submit(start, opts, folder, noter(i)) for i, start in enumerate(starts)]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f.exception() for f in futures if f.done() and f.exception()), None)
        if failed is not None:
            raise failed
        return [f.result() for f in futures]
    except BaseException:
        with lock:
            stopping.set()
            # a replica whose start failed has stopped its own server (_start_ready)
            live = [r for i, rs in launched.items()
                    if not (i < len(futures) and futures[i].done() and futures[i].exception()) for r in rs]
        for record in live:
            log(stop_record(record, env))
        raise
    finally:
        pool.shutdown(wait=True)


def _start_replicas(env: dict, work_dir: Path, opts, folder: Path, log: Callable[[str], None]) -> dict:
    """opts.replicas servers, started together (_start_together), each on its own CPUs or GPUs
    (replicas.py) and its own port (given --port: that port and the next ones). One that fails stops
    the others."""
    cfg = config_from_env(env)
    width = devices_per_server(cfg)
    machine = detect(env)
    placements = replicas.place(machine, opts.replicas, width)
    log(f'{opts.replicas} replicas of the server: ' + '; '.join(p.describe() for p in placements))
    port = env.get('CM_VLLM_PORT')
    starts = [_prepared_one({**env, 'CM_VLLM_PORT': str(int(port) + p.index - 1) if port else ''}, work_dir,
                            lambda line, i=p.index: log(f'[replica {i}] {line}'),
                            replicas.share(machine, p, placements), p)
              for p in placements]
    return _started_env(_start_together(starts, opts, folder, env, log), opts)


def _start_ray_replicas(env: dict, work_dir: Path, opts, folder: Path, log: Callable[[str], None]) -> dict:
    """One replica per node of the Ray cluster (raycluster/placement.py), each started by a launcher
    here; the nodes on this machine split its CPUs as --replicas does."""
    address = ray_replicas_address(env)
    python, site = env.get('CM_VLLM_PYTHON') or 'python3', env.get('CM_RAY_PYTHONPATH') or ''
    if not site:
        raise server.ServerError('a Ray cluster needs Ray beside the server\'s vLLM: run with the install,ray '
                                 'step (the main command and run-vllm-server add it with --ray_address)')
    nodes = ray_placement.choose(ray_placement.list_nodes(python, site, address),
                                 opts.replicas if env.get('CM_VLLM_REPLICAS') else None)
    log(f'Ray cluster at {address}: {len(nodes)} replica(s), one per node: '
        + '; '.join(n.describe() for n in nodes))
    machine = detect(env)
    local = [n for n in nodes if n.here()]
    placements = dict(zip((n.id for n in local), replicas.place(machine, len(local)))) if local else {}
    port = env.get('CM_VLLM_PORT')
    usage = parse_bool('CM_VLLM_USAGE_STATS', env.get('CM_VLLM_USAGE_STATS'), default=False)
    starts = []
    for i, node in enumerate(nodes, 1):
        say = (lambda line, i=i: log(f'[replica {i}] {line}'))
        p = placements.get(node.id)
        rport = int(port) + i - 1 if port else None      # given: P, P+1, ...; else chosen on the node
        renv = {**env, 'CM_VLLM_HOST': node.ip, 'CM_VLLM_PORT': str(rport or '')}
        if p is not None:
            p = replace(p, index=i, ray_node=node.ip)
            argv, added, cfg = prepare({**renv, **p.env()}, say,
                                       machine=replicas.share(machine, p, list(placements.values())))
            added.update(p.env())
        else:
            say(f'{node.describe()} is another machine: vLLM\'s own defaults and what was given, not '
                'settings chosen here (give --max_num_seqs, --kv_cache_space to set them)')
            p = replicas.Placement(i, ray_node=node.ip)
            argv, added, cfg = prepare(renv, say, tune=False)
        if not rport:     # the port is chosen on the node, where it is free (launch.py)
            argv = [a for a in argv if not a.startswith('--port=')]
        starts.append(_ray_replica(env, work_dir, i, node, argv, added, cfg, p, rport, python, address, site,
                                   usage, say))
    started = _start_together(starts, opts, folder, env, log)
    out = _started_env(started, opts)
    out['CM_VLLM_SERVER_RAY_NODES'] = '; '.join(n.describe() for n in nodes)
    return out


def _ray_replica(env: dict, work_dir: Path, i: int, node, argv: list, added: dict, cfg: ServeConfig,
                 p: replicas.Placement, rport: int | None, python: str, address: str, site: str, usage: bool,
                 say: Callable[[str], None]):
    """start(opts, folder, on_start) for replica i on its Ray node: its launcher started here, the
    server waited for until it answers."""
    ready = work_dir / f'vllm-replica-{i}-{node.id[:12]}.ready'
    log_path = work_dir / f'vllm-replica-{i}-{node.id[:12]}.log'
    record_path = work_dir / f'vllm-replica-{i}-{node.id[:12]}.json'
    launcher = ray_placement.launcher_argv(python, address, node, ready, argv, list(added), rport, p.cpus)

    def launch(argv_, added_, log_path_):
        return server.start_launched(launcher, argv_, model_name=expected_name(cfg), log_path=log_path_,
                                     ready_path=ready, env={**ray_placement.ray_env(site, usage), **added_})

    def start(opts, folder: Path, on_start: Callable[[server.ServerRecord], None]) -> _Started:
        proc = _start_ready(argv, cfg, added, log_path, opts.start_timeout_s, cfg.api_key,
                            say, _recorder(folder, opts, on_start), launch=launch)
        return _kept(proc, opts, record_path, log_path, added, cfg, p)
    return start


def start_placed(env: dict, work_dir: str | Path, place: replicas.Placement, placements: list[replicas.Placement],
                 machine: tuning.Machine, log: Callable[[str], None] = print) -> dict:
    """One server on its placement (what each of --replicas is), with its own inputs: for a caller
    that gives replicas different settings (benchmarks/replicas.py: a slow replica beside a fast one)."""
    opts = run_options_from_env(env)
    folder = records.records_dir(env)
    started = _start_one(env, Path(work_dir), opts, folder, log,
                         replicas.share(machine, place, placements), place)
    return _started_env([started], opts)


def _started_env(started: list[_Started], opts) -> dict:
    """What the benchmark reads: every server's URL (comma-separated) and, joined by os.pathsep, their
    records and logs; the first one's command and env (the others differ in port and placement)."""
    first = started[0]
    public = {k: v for k, v in first.added.items() if not is_secret(k)}
    out = {'CM_VLLM_SERVER_URL': ','.join(s.proc.url for s in started),
           'CM_VLLM_SERVER_MODEL_NAME': expected_name(first.cfg),
           'CM_VLLM_SERVER_STARTED': 'yes',
           'CM_VLLM_SERVER_RECORD': os.pathsep.join(str(s.record_path) for s in started),
           'CM_VLLM_SERVER_LOG': os.pathsep.join(str(s.log_path) for s in started),
           'CM_VLLM_SERVER_PID': ','.join(str(s.proc.record.pid) for s in started),
           'CM_VLLM_SERVER_COMMAND': shell_command(first.proc.record.argv),
           'CM_VLLM_KEEP_SERVER': 'yes' if opts.keep_server else 'no',
           'CM_VLLM_SERVER_REPLICAS': str(len(started)),
           'CM_VLLM_SERVER_MAX_NUM_SEQS': str(first.cfg.max_num_seqs or ''),
           **{f'CM_VLLM_SERVER_ENV_{k}': v for k, v in public.items()}}
    if len(started) > 1 or first.placement is not None and first.placement.ray_node:
        out['CM_VLLM_SERVER_PLACEMENT'] = '; '.join(f'{s.placement.describe()} at {s.proc.url}' for s in started)
    return out


def _start_ready(argv, cfg: ServeConfig, added: dict, log_path: Path, timeout_s: float, api_key,
                 log: Callable[[str], None],
                 on_start: Callable[[server.ServerRecord], Path] | None = None,
                 cpus: tuple[int, ...] = (), launch=None) -> server.ServerProcess:
    """Start the server and wait until it answers (on_start records it as soon as its process exists).
    When vLLM refuses the KV cache size (not enough memory on its NUMA node), retry once with the size it
    reported available; `added` is updated in place. launch(argv, added, log_path): how the server is
    started where it is not a process of this machine (a Ray replica's launcher)."""
    for attempt in (1, 2):
        public = {k: v for k, v in added.items() if not is_secret(k)}
        log(f'starting: {" ".join(f"{k}={v}" for k, v in sorted(public.items()))} {shell_command(redact(argv))}')
        offset = log_path.stat().st_size if log_path.exists() else 0
        if launch is not None:
            proc = launch(argv, added, log_path)
        else:
            proc = server.start(argv, host=cfg.host, port=cfg.port, model_name=expected_name(cfg), log_path=log_path,
                                env={**os.environ, **added}, cpus=cpus)
        saved = on_start(proc.record) if on_start else None
        try:
            proc.wait_ready(timeout_s, api_key=api_key, progress=log)
            return proc
        except server.EarlyExitError as e:
            log(proc.stop(grace_s=server.STOP_GRACE_S))
            if saved:
                saved.unlink(missing_ok=True)
            refusal = memory.find_refusal(server.log_since(log_path, offset))
            if refusal is None and attempt == 2:
                raise server.ServerError(f'{e}\n(this was the one retry, with VLLM_CPU_KVCACHE_SPACE='
                                         f'{added["VLLM_CPU_KVCACHE_SPACE"]})') from None
            if refusal is None:
                raise
            gib = refusal.retry_gib()
            if attempt == 2 or gib < 1:
                why = ('after one retry with the size vLLM reported available' if attempt == 2 else
                       'less than 1 GiB is left there, nothing to retry with')
                raise server.ServerError(
                    f'{refusal.describe()} ({why}). Free memory on NUMA node {refusal.node} (other processes, '
                    f'page cache that cannot be dropped), lower --max_num_seqs/--max_model_len, or pass '
                    f'--kv_cache_space=GiB.\n{e}') from None
            log(f'{refusal.describe()}: retrying once with VLLM_CPU_KVCACHE_SPACE={gib} (from the '
                f'{refusal.available_gib:.2f} GiB vLLM reported available: half of what is left after '
                f'{memory.RUNTIME_GIB} GiB for the runtime, as the first sizing does)')
            added['VLLM_CPU_KVCACHE_SPACE'] = str(gib)
        except BaseException:
            log(proc.stop(grace_s=server.STOP_GRACE_S))
            if saved:
                saved.unlink(missing_ok=True)
            raise
    raise AssertionError('unreachable')


def stop_from_env(env: dict, log: Callable[[str], None] = print) -> str | None:
    """Stop the servers this run started, unless --keep_server; None when there is nothing to stop."""
    paths = records.started_records(env)
    if env.get('CM_VLLM_SERVER_STARTED') != 'yes' or not paths:
        return None
    msgs = []
    for record_path in paths:
        record = server.ServerRecord.load(record_path)
        if parse_bool('CM_VLLM_KEEP_SERVER', env.get('CM_VLLM_KEEP_SERVER')):
            msg = (f'vLLM server kept running at {record.url} (pid {record.pid}, log {record.log_path}); stop it '
                   f'with cm run script --tags=run,vllm-server,_stop --server_record={record_path}')
        else:
            msg = stop_record(record, env)
        log(msg)
        msgs.append(msg)
    return '\n'.join(msgs)


def stop_record(record: server.ServerRecord, env: dict) -> str:
    """Stop a recorded server and drop it from the records of running servers."""
    msg = server.stop(record)
    records.forget(records.records_dir(env), record)
    return msg
