"""Accuracy and compliance: the reference ROUGE numbers fast, targets, accuracy.txt, TEST06.

Modules: log (mlperf_log_accuracy.json), splitter (Punkt, offline), rouge (exact fast ROUGE),
scoring (all cores), evaluate (llama2-70b's reference pipeline; decode_log, shared), summarization
(llama3.1-8b's scores from decoded summaries or a log), pipelines (which of the two a benchmark's
accuracy spec picks), targets (every benchmark's, from mlperf_llm.benchmarks; embedded),
report (accuracy.txt with hash=, accuracy.json), test06 (verification), test06_config
(audit.config), cli.
"""
