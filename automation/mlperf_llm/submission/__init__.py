"""The MLPerf Inference submission of a llama2-70b run: tree, rules, pages, tarball, official checker.

Entry points: `tree.build_submission`, `rules.find_violations`, `tarball.pack`, `checker.run_checker`.
"""
