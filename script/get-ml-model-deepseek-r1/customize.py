"""Thin hooks, shared with get-ml-model-llama2, -llama3 and -gpt-oss: mlperf_llm.models.step picks the route
and reads the result (which never holds a token); this script's alias picks the DeepSeek-R1 family."""
from mlperf_llm.models.step import postprocess, preprocess  # noqa: F401
