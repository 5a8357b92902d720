"""Results that others published (an MLCommons results repository's submitter folder), read into one
typed description per test (reader.py), with what each folder's documents say about how it was made
(commands.py: CM, MLC and `vllm serve` command lines). Untidy folders give findings, never tracebacks;
the logs LoadGen wrote win over labels and commands."""
