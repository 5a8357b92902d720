"""Build script repositories from dicts (like DVC's tmp_dir.gen) and run the engine on them."""
from __future__ import annotations

import io
import os
import textwrap

import yaml

from cmengine import cli
from cmengine.registry import Repo

SCRIPT_UID = "5b4e0237da074764"


def write_script(repo_dir: str, alias: str, manifest: dict, files: dict | None = None) -> str:
    folder = os.path.join(repo_dir, "script", alias)
    os.makedirs(folder, exist_ok=True)
    meta = {"alias": alias, "uid": (alias.encode().hex() + "0" * 16)[:16],
            "automation_alias": "script", "automation_uid": SCRIPT_UID}
    meta.update(manifest)
    meta.setdefault("tags", [alias])
    with open(os.path.join(folder, "_cm.yaml"), "w") as f:
        yaml.safe_dump(meta, f, sort_keys=False)
    for name, text in (files or {}).items():
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text).lstrip("\n"))
    return folder


def make_repo(root: str, scripts: dict, alias: str = "fixture") -> Repo:
    """scripts: {alias: manifest dict, or (manifest dict, {filename: text})}"""
    repo_dir = os.path.join(root, alias)
    os.makedirs(os.path.join(repo_dir, "script"), exist_ok=True)
    with open(os.path.join(repo_dir, "cmr.yaml"), "w") as f:
        yaml.safe_dump({"alias": alias, "uid": "0123456789abcdef"}, f)
    for name, spec in scripts.items():
        manifest, files = spec if isinstance(spec, tuple) else (spec, {})
        write_script(repo_dir, name, manifest, files)
    return Repo(alias, repo_dir)


class Runner:
    """Runs the engine in-process on fixture repositories, with its own cache dir."""

    def __init__(self, repos: list[Repo], cache_dir: str, include_project: bool = False):
        self.repos = repos
        self.cache_dir = cache_dir
        self.include_project = include_project
        self.output = ""

    def session(self) -> cli.Session:
        buf = io.StringIO()
        s = cli.Session(self.repos, cache_dir=self.cache_dir, out=buf)
        if not self.include_project:
            s.registry.repos = self.repos
            from cmengine.registry import Registry
            s.registry = Registry(self.repos)
        self._buf = buf
        return s

    def run(self, tags: str = "", **i) -> dict:
        i = dict(i)
        if tags:
            i["tags"] = tags
        i.setdefault("action", "run")
        i.setdefault("quiet", True)
        s = self.session()
        r = cli.guarded(lambda: s.run(i))
        self.output = self._buf.getvalue()
        return r

    def plan(self, tags: str, **i) -> dict:
        return self.run(tags, dry_run=True, **i)
