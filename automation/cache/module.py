"""cmind adapter for the `cache` automation: `cm show cache`, `cm rm cache`."""
import os
import sys

_AUTOMATION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _AUTOMATION_DIR not in sys.path:
    sys.path.insert(0, _AUTOMATION_DIR)

from cmind.automation import Automation  # noqa: E402

from cmengine import cli  # noqa: E402


class CAutomation(Automation):
    """Cache entries of the cm4mlperf-llm engine."""

    def __init__(self, cmind, automation_file):
        super().__init__(cmind, __file__)

    def _session(self, i):
        return cli.Session([], cache_dir=i.get("cache_dir"))

    def show(self, i):
        """List entries: cm show cache [--tags=...] [-v]"""
        return cli.guarded(lambda: self._session(i).show_cache(i))

    def search(self, i):
        return self.show(i)

    def delete(self, i):
        """Remove entries: cm rm cache --tags=... [-f] | cm rm cache --orphans"""
        return cli.guarded(lambda: self._session(i).rm_cache(i))

    rm = delete
