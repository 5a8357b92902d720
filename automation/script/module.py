"""cmind adapter for the `script` automation: `cm run script`, `cm plan script`, `cm find script`.

cmind loads this file by path; everything it does is in the `cmengine` package next to it.
"""
import os
import sys

_AUTOMATION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _AUTOMATION_DIR not in sys.path:
    sys.path.insert(0, _AUTOMATION_DIR)

from cmind.automation import Automation  # noqa: E402

from cmengine import cli  # noqa: E402


class CAutomation(Automation):
    """Scripts: run (resolve, plan, cache, execute), plan (dry run), search (list)."""

    def __init__(self, cmind, automation_file):
        super().__init__(cmind, __file__)

    def _session(self, i):
        repos = [cli.Repo(r.meta.get("alias", "") or os.path.basename(r.path), r.path)
                 for r in getattr(self.cmind.repos, "lst", [])]
        return cli.Session(repos, cache_dir=i.get("cache_dir"))

    def run(self, i):
        """Run a script and its dependencies: cm run script --tags=a,b,_variation --key=value"""
        return cli.guarded(lambda: self._session(i).run(i))

    def plan(self, i):
        """Print the resolved graph with a cache verdict per node, run nothing."""
        return cli.guarded(lambda: self._session(i).run(dict(i, dry_run=True)))

    def search(self, i):
        """List scripts: cm find script [--tags=...]"""
        return cli.guarded(lambda: self._session(i).find(i))

    find = search
