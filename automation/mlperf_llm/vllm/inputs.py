"""The env edge: `CM_VLLM_*` strings from the script folder -> typed `ServeConfig` and run options.

Each `ServeConfig` field `name` is read from `CM_VLLM_<NAME>` (e.g. `CM_VLLM_MAX_NUM_SEQS`);
the extra arguments come from `CM_VLLM_EXTRA_ARGS` as one shell-quoted string.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

from cmcontract.yesno import YesNoError, parse_yes_no

from .command import ServeConfig, ServeConfigError, parse_extra_args

PREFIX = 'CM_VLLM_'
REPLICAS_KEY = PREFIX + 'REPLICAS'     # --replicas: servers of the model (not a vLLM flag)


def env_key(field_name: str) -> str:
    return PREFIX + field_name.upper()


# --api_key: the key a server requires of its clients; a secret (cmcontract.secret): in no record, no
# printed command, no file; it reaches the harness's test process in that process's environment
API_KEY_ENV = env_key('api_key')
# vLLM's own name for it: its server requires the key in VLLM_API_KEY when --api-key is not given, so a
# key exported there is the key of every server started in that environment (and the way to give one
# without a command line that every user of the machine can read: ps)
VLLM_KEY_ENV = 'VLLM_API_KEY'


def api_key_of(env: dict, environ: Mapping[str, str]) -> str:
    """The key the servers require: --api_key (CM_VLLM_API_KEY in `env`), else VLLM_API_KEY in the
    process's environment `environ`; '' for none."""
    return str(env.get(API_KEY_ENV) or environ.get(VLLM_KEY_ENV) or '').strip()


def parse_bool(key: str, text: str | None, default: bool = False) -> bool:
    """The contract's yes/no (cmcontract/yesno.py); a value that is neither, as a ServeConfigError."""
    try:
        return parse_yes_no(key, text, default)
    except YesNoError as e:
        raise ServeConfigError(str(e)) from None


def _parse_int(key, text):
    try:
        return int(str(text).strip())
    except ValueError:
        raise ServeConfigError(f'{key}={text!r} is not an integer; give a whole number, e.g. 64') from None


def _parse_float(key, text):
    try:
        return float(str(text).strip())
    except ValueError:
        raise ServeConfigError(f'{key}={text!r} is not a number; give a fraction such as 0.95') from None


_INTS = {'tensor_parallel_size', 'pipeline_parallel_size', 'max_num_seqs', 'max_model_len',
         'max_num_batched_tokens', 'port'}
_FLOATS = {'gpu_memory_utilization'}
_BOOLS = {'enable_chunked_prefill', 'enforce_eager', 'enable_expert_parallel', 'disable_log_requests'}


def config_from_env(env: dict, **overrides) -> ServeConfig:
    """Read a ServeConfig from env; empty strings count as unset. `overrides` win over env."""
    values = {}
    for f in fields(ServeConfig):
        key = env_key(f.name)
        text = env.get(key)
        if f.name == 'extra_args':
            values[f.name] = parse_extra_args(text)
            continue
        if text is None or str(text).strip() == '':
            if f.name in _BOOLS:
                values[f.name] = False
            continue
        if f.name in _INTS:
            values[f.name] = _parse_int(key, text)
        elif f.name in _FLOATS:
            values[f.name] = _parse_float(key, text)
        elif f.name in _BOOLS:
            values[f.name] = parse_bool(key, text)
        else:
            values[f.name] = str(text).strip()
    values.update({k: v for k, v in overrides.items() if v is not None})
    if not values.get('model'):
        raise ServeConfigError(f'no model to serve: set --model=PATH (env {env_key("model")}) or add a model '
                               'dependency that sets it')
    return ServeConfig(**values)


@dataclass(frozen=True)
class RunOptions:
    """How the managed server is run (not part of the vLLM command line)."""

    api_servers: tuple[str, ...] = ()
    keep_server: bool = False
    start_timeout_s: float = 600.0
    replicas: int = 1                 # servers of the same model, each on its own CPUs or GPUs (replicas.py)


def split_urls(text: str | None) -> tuple[str, ...]:
    """`URL[,URL...]` -> normalised base URLs (no trailing slash, no /v1 suffix)."""
    if not text:
        return ()
    urls = []
    for part in str(text).split(','):
        url = part.strip().rstrip('/')
        if not url:
            continue
        if not url.startswith(('http://', 'https://')):
            raise ServeConfigError(f'api_server {part.strip()!r} is not an http(s) URL; '
                                   'write it as http://HOST:PORT')
        if url.endswith('/v1'):
            url = url[:-3]
        urls.append(url)
    return tuple(urls)


def run_options_from_env(env: dict) -> RunOptions:
    timeout_text = env.get('CM_VLLM_SERVER_START_TIMEOUT') or '600'
    timeout = _parse_float('CM_VLLM_SERVER_START_TIMEOUT', timeout_text)
    if timeout <= 0:
        raise ServeConfigError(f'CM_VLLM_SERVER_START_TIMEOUT={timeout_text!r} must be a positive number of seconds')
    return RunOptions(
        api_servers=split_urls(env.get('CM_VLLM_API_SERVERS')),
        keep_server=parse_bool('CM_VLLM_KEEP_SERVER', env.get('CM_VLLM_KEEP_SERVER')),
        start_timeout_s=timeout,
        replicas=_replicas(env.get(REPLICAS_KEY)),
    )


def _replicas(text: str | None) -> int:
    from .replicas import ReplicaError, parse_replicas
    try:
        return parse_replicas(text)
    except ReplicaError as e:
        raise ServeConfigError(str(e)) from None
