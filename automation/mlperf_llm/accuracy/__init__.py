"""Accuracy and compliance for llama2-70b: the reference ROUGE numbers fast, targets, accuracy.txt, TEST06.

Modules: log (mlperf_log_accuracy.json), splitter (Punkt, offline), rouge (exact fast ROUGE),
scoring (all cores), evaluate (the reference pipeline), targets (99 / 99.9 / embedded), report
(accuracy.txt with hash=, accuracy.json), test06 (verification), test06_config (audit.config), cli.
"""
