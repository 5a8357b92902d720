"""The llama2-70b benchmark harness: LoadGen driving vLLM's OpenAI API (or transformers).

One LoadGen test per process: `python -m mlperf_llm.harness.run`; `driver` plans tests,
runs each in a subprocess and places the logs in the results layout.
"""
