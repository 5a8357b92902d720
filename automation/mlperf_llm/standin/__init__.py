"""Loopback OpenAI-compatible stand-in for vLLM, used by tests and benchmarks."""

from .process import StandinProcess, StandinThread
from .server import StandinConfig, generated_ids, prompt_key, serve

__all__ = ["StandinConfig", "StandinProcess", "StandinThread", "generated_ids", "prompt_key", "serve"]
