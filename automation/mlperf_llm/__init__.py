"""Domain library used by the scripts: system detection, data, models, vLLM, harness, accuracy, submission."""
