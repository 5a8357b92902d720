"""The MLPerf Inference submission of an LLM benchmark run (llama2-70b, llama3.1-8b, llama3.1-8b-edge): tree,
rules, pages, tarball, official checker.

Entry points: `tree.build_submission`, `rules.find_violations`, `tarball.pack`, `checker.run_checker`.
"""
