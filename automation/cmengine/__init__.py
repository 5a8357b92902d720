"""cmengine: the cm4mlperf-llm script engine.

Modules, one concern each:
  manifest     `_cm.yaml` loading, schema, file:line errors
  registry     scripts across repositories, tag search, did-you-mean
  variations   `_x` selection, groups, defaults, base, dynamic `name.#`
  conditions   enable_if_env / skip_if_env
  env          env/state merging, `+PATH` lists, `<<<VAR>>>`
  versions     version constraints
  fingerprint  content hashes of script folders (memoised)
  importgraph  the local modules a step's code imports or runs (ast), for its key
  graph        the resolved graph, node keys, cycles, the printed plan
  cache        the atomic, locked store and its verdicts
  executor     hooks, run.sh, logs, tmp-run-env.out
  cli          cmind input -> request, results -> cmind return dicts
  errors       the exception tree
"""
__version__ = "0.1.0"
