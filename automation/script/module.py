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
        """List scripts: cm find script [--tags=...]. The list holds cmind Artifact objects
        (`.path`, `.meta`, `.repo_path`, `.repo_meta`), as CM code that calls find expects."""
        r = cli.guarded(lambda: self._session(i).find(i))
        if r.get("return") == 0:   # "scripts": the same as plain data, for --out=json
            r["scripts"] = [{k: v for k, v in x.items() if k != "meta"} for x in r["list"]]
            r["list"] = [self._artifact(x) for x in r["list"]]
        return r

    find = search

    def check(self, i):
        """List the manifests this engine cannot use, with the reason: cm check script"""
        return cli.guarded(lambda: self._session(i).check(i))

    def _artifact(self, found: dict):
        from cmind.artifact import Artifact
        a = Artifact(self.cmind, found["path"])
        a.original_meta = a.meta = found["meta"]
        for r in getattr(self.cmind.repos, "lst", []):
            if os.path.dirname(os.path.dirname(found["path"])) in (r.path, r.path_with_prefix):
                a.repo_path, a.repo_meta = r.path_with_prefix, r.meta
        return a
