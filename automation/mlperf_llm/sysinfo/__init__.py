"""Knowing the machine: parsers of system tools' output, detection with named gaps, the MLPerf
system description builder, and helpers for venvs, pinned packages, LoadGen and the inference sources.

Modules: cpu, gpu, memory, network, storage (parsers), probe (detection: `collect`), sut (the system
description), envmap (facts -> CM env), sutenv (CM env -> description inputs), pyenv (venvs, pip), rounds (LoadGen per round),
inference_src (the mlcommons/inference checkout), loadgen_src (TEST06's LoadGen built from that
source), loadgen_conf (the mlperf.conf beside such a build). Import them by name
(`from mlperf_llm.sysinfo.pyenv import pip_install`): this file imports nothing, so a step that uses
one module is not keyed on the others (docs/engine.md, "The key").
"""
