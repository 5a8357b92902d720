"""The benchmark harness: LoadGen driving vLLM's OpenAI API (or transformers) for the benchmark table's
LLM benchmarks.

One LoadGen test per process: `python -m mlperf_llm.harness.run` (testrun.py starts it); `driver.run_all`
runs a request's tests (request.py) in order and places the logs in the results layout.
"""
