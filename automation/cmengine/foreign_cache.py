"""Cache entries of another CM engine (cm4mlops' or mlperf-automations' `cache` automation).

They live as `cache/<uid>/_cm.json` artifacts in a registered repository (usually `local`). This
engine lists them, marked as another engine's, and never reuses or removes them: their key is
their tags alone, so whether one still fits cannot be told. The other engine removes them
(`cm rm <its repository>:cache --tags=...`).
"""
from __future__ import annotations

import fnmatch
import json
import os
from typing import NamedTuple

CACHE_AUTOMATION_UID = "541d6f712a6b464e"


class ForeignEntry(NamedTuple):
    uid: str
    script: str        # the alias of the script that made it
    tags: list
    version: str
    path: str


def scan(repo_paths: list[str]) -> list[ForeignEntry]:
    """Every other engine's cache entry in these repositories (unreadable ones are skipped)."""
    out = []
    for repo in repo_paths:
        top = os.path.join(repo, "cache")
        try:
            names = sorted(os.listdir(top))
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name)
            try:
                with open(os.path.join(path, "_cm.json"), encoding="utf-8") as f:
                    meta = json.load(f)
            except (OSError, ValueError):
                continue
            if not isinstance(meta, dict) or (meta.get("automation_uid") != CACHE_AUTOMATION_UID
                                              and meta.get("automation_alias") != "cache"):
                continue
            script = str(meta.get("associated_script_artifact", "")).split(",")[0]
            out.append(ForeignEntry(str(meta.get("uid", name)), script,
                                    [str(t) for t in meta.get("tags", [])],
                                    str(meta.get("version", "")), path))
    return out


def matching(entries: list[ForeignEntry], want: list[str], avoid: list[str],
             artifact: str = "") -> list[ForeignEntry]:
    """The entries a `--tags=...` (and an artifact name or uid prefix) selects, as for ours."""
    out = []
    for e in entries:
        have = set(e.tags) | {e.script}
        if artifact and not (fnmatch.fnmatch(e.script, artifact) or e.uid.startswith(artifact)):
            continue
        if all(t in have for t in want) and not any(t in have for t in avoid):
            out.append(e)
    return out


def owners(automation_dirs: dict[str, str]) -> list[str]:
    """Aliases of the repositories, other than this project, that have a `cache` automation
    (given {repository alias: its automation/cache folder})."""
    return sorted(alias for alias, folder in automation_dirs.items()
                  if os.path.isfile(os.path.join(folder, "_cm.json"))
                  or os.path.isfile(os.path.join(folder, "_cm.yaml")))


def render(entries: list[ForeignEntry], engines: list[str], verbose: bool = False) -> list[str]:
    """The lines `cm show cache` prints after its own entries."""
    if not entries:
        return []
    who = " or ".join(f"`{e}`" for e in engines) or "another CM engine"
    lines = [f"\n{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} of another engine's "
             f"cache ({who}; this engine neither reuses nor removes them):"]
    for e in entries:
        version = f" {e.version}" if e.version else ""
        lines.append(f"{e.uid[:12]}  [other engine]  {e.script}{version}\n    path: {e.path}")
        if verbose:
            lines.append(f"    tags: {','.join(e.tags)}")
    return lines


def removal_note(entries: list[ForeignEntry], engines: list[str], tags: str) -> str:
    """What `cm rm cache` says about the other engine's entries it matched and left alone."""
    if not entries:
        return ""
    how = (f"cm rm {engines[0]}:cache --tags={tags or '...'} -f" if engines
           else "the engine that made them")
    return (f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} of another engine's cache "
            f"also match{'es' if len(entries) == 1 else ''} and {'was' if len(entries) == 1 else 'were'}"
            f" left alone (this engine never removes them); to remove "
            f"{'it' if len(entries) == 1 else 'them'}: {how}")
