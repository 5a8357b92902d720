"""cmind adapter for the `cache` automation: `cm show cache`, `cm rm cache`."""
import os
import sys

_AUTOMATION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _AUTOMATION_DIR not in sys.path:
    sys.path.insert(0, _AUTOMATION_DIR)

from cmind.automation import Automation  # noqa: E402

from cmengine import cli, foreign_cache  # noqa: E402

OUR_REPO_UID = "6d3f1c8e2a9b4f70"   # cmr.yaml


class CAutomation(Automation):
    """Cache entries of the cm4mlperf-llm engine (and, listed only, another engine's)."""

    def __init__(self, cmind, automation_file):
        super().__init__(cmind, __file__)

    def _session(self, i):
        session = cli.Session([], cache_dir=i.get("cache_dir"))
        # another engine's entries (cm4mlops' `cache` automation keeps them in `local`): listed,
        # never reused or removed (cmengine/foreign_cache.py)
        repos = getattr(self.cmind.repos, "lst", [])
        ours = os.path.realpath(cli.this_repo().path)
        session.foreign_repos = [r.path_with_prefix for r in repos]
        session.foreign_engines = foreign_cache.owners(
            {r.meta.get("alias", ""): os.path.join(r.path_with_prefix, "automation", "cache")
             for r in repos if os.path.realpath(r.path) != ours
             and r.meta.get("uid") != OUR_REPO_UID})
        return session

    def show(self, i):
        """List entries: cm show cache [--tags=...] [-v]"""
        return cli.guarded(lambda: self._session(i).show_cache(i))

    def search(self, i):
        return self.show(i)

    def delete(self, i):
        """Remove entries: cm rm cache --tags=... [-f] | cm rm cache --orphans"""
        return cli.guarded(lambda: self._session(i).rm_cache(i))

    rm = delete
