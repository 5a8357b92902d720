"""Records of the vLLM servers runs started on this machine, so that none is left behind unseen.

A run writes `<dir>/<host>_<port>.json` (a `ServerRecord`: pid, start time, port, model, the owning
run's pid and start time, uid) as soon as the server process exists, and removes it when it stops the
server. A run that is itself SIGKILLed cannot stop its server (it lives in a session of its own); the
next run that starts a server reads the records first (`reconcile`) and:
- removes a record whose server is gone (or whose PID now belongs to another process);
- leaves a server alone while the run that owns it still runs (another run in progress);
- stops a server whose run is gone and that was not kept (--keep_server), saying which and why;
- says so about a kept server that still runs (it is the user's; the message says how to stop it).

The folder is per user: CM_VLLM_SERVER_RECORDS_DIR, else $XDG_RUNTIME_DIR/cm4mlperf-llm/vllm-servers,
else ~/.cache/cm4mlperf-llm/vllm-servers.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Callable

from . import server


def records_dir(env: dict) -> Path:
    given = env.get('CM_VLLM_SERVER_RECORDS_DIR') or os.environ.get('CM_VLLM_SERVER_RECORDS_DIR')
    if given:
        return Path(given)
    runtime = os.environ.get('XDG_RUNTIME_DIR')
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / 'cm4mlperf-llm' / 'vllm-servers'
    return Path.home() / '.cache' / 'cm4mlperf-llm' / 'vllm-servers'


def record_path(folder: Path, record: server.ServerRecord) -> Path:
    hostport = record.url.split('://', 1)[-1].replace('[', '').replace(']', '').replace(':', '_')
    return Path(folder) / f'{hostport}.json'


def save(folder: Path, record: server.ServerRecord) -> Path:
    path = record_path(folder, record)
    path.parent.mkdir(parents=True, exist_ok=True)
    record.save(path)
    return path


def forget(folder: Path, record: server.ServerRecord) -> None:
    """Remove the record of this server (only if it still describes this server)."""
    path = record_path(folder, record)
    try:
        current = server.ServerRecord.load(path)
    except server.ServerError:
        return
    if current.pid == record.pid and current.start_ticks == record.start_ticks:
        path.unlink(missing_ok=True)


def mark_kept(folder: Path, record: server.ServerRecord, keep: bool) -> server.ServerRecord:
    kept = replace(record, keep=keep)
    save(folder, kept)
    return kept


def _describe(r: server.ServerRecord) -> str:
    import time
    when = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(r.started_at)) if r.started_at else 'unknown time'
    return (f'vLLM server pid {r.pid} at {r.url} serving {r.model_name!r}, started {when} by run pid '
            f'{r.owner_pid} (log {r.log_path})')


def reconcile(folder: Path, log: Callable[[str], None] = print) -> list[server.ServerRecord]:
    """Deal with the servers earlier runs left (see the module's text); returns the records still valid."""
    kept = []
    try:
        paths = sorted(Path(folder).glob('*.json'))
    except OSError:
        return kept
    uid = os.getuid() if hasattr(os, 'getuid') else None
    for path in paths:
        try:
            r = server.ServerRecord.load(path)
        except server.ServerError:
            log(f'removing unreadable server record {path}')
            path.unlink(missing_ok=True)
            continue
        if not r.server_alive():
            path.unlink(missing_ok=True)
            continue
        if r.owner_alive():
            kept.append(r)          # another run in progress owns it
            continue
        if r.keep:
            log(f'note: {_describe(r)} is still running, kept with --keep_server; stop it with '
                f'cm run script --tags=run,vllm-server,_stop --server_record={path}')
            kept.append(r)
            continue
        if uid is not None and r.owner_uid is not None and r.owner_uid != uid:
            kept.append(r)          # another user's: not ours to stop
            continue
        log(f'found a {_describe(r)}: that run is gone (it was killed before it could stop its server); '
            f'stopping it: {server.stop(r)}')
        path.unlink(missing_ok=True)
    return kept


def started_records(env: dict) -> list[str]:
    """The record files of the servers a run started (CM_VLLM_SERVER_RECORD: one per replica, joined
    by os.pathsep as PATH is)."""
    return [p for p in (env.get('CM_VLLM_SERVER_RECORD') or '').split(os.pathsep) if p]
