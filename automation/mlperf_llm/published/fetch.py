"""A folder of a results repository given by its address, fetched sparsely: `--from=URL` where URL is
what a browser shows for a folder of an MLCommons results repository,
`https://github.com/mlcommons/inference_results_v4.1/tree/main/open/NeuralMagic/results/<system>`.

Only what a replay reads is fetched (git's partial clone and sparse checkout, one commit deep): for a
system's folder (or one below it), that system's results, measurements, compliance and systems JSON,
and the submitter's top README, model_mapping.json, code/ and documentation/; for a submitter's
folder, all of it. The fetch lands in a temporary folder beside its destination and is renamed into
place when whole, so a failed fetch leaves nothing that looks like a result."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass

from ..benchmarks import DIVISIONS
from ..gitcmd import run_git

TREE = re.compile(r"^(?P<repo>(?:https?|file|ssh)://.+?|git@[^:]+:.+?)/tree/(?P<ref>[^/]+)(?:/(?P<path>.*?))?/*$")
PER_SYSTEM = ("results", "measurements", "compliance")
SUBMITTER_FILES = ("README.md", "model_mapping.json", "code/", "documentation/")


class FetchError(Exception):
    """A URL that cannot be fetched: which, why and what to do."""


@dataclass(frozen=True)
class FolderUrl:
    repo: str            # what git clones
    ref: str             # branch or tag
    path: str            # the folder inside the repository ('' = the whole repository)

    @property
    def parts(self) -> list[str]:
        return [p for p in self.path.split("/") if p]


def is_url(text: str) -> bool:
    return "://" in text or text.startswith("git@")


def parse(url: str) -> FolderUrl:
    """`<repository>/tree/<ref>/<folder>`, the form a repository host shows for a folder."""
    m = TREE.match(url.strip())
    if not m:
        raise FetchError(f"--from={url}: not a folder address of a results repository; give one as the "
                         "repository's web page shows it, e.g. https://github.com/mlcommons/inference_results_v4.1"
                         "/tree/main/open/NeuralMagic (or a local folder or tarball)")
    repo = m.group("repo")
    if repo.startswith("https://github.com/") and not repo.endswith(".git"):
        repo += ".git"
    return FolderUrl(repo, m.group("ref"), m.group("path") or "")


def patterns(folder: FolderUrl) -> list[str]:
    """The sparse-checkout patterns (gitignore style) of what a replay of that folder reads."""
    parts = folder.parts
    if len(parts) < 2 or parts[0] not in DIVISIONS:
        raise FetchError(f"--from: {folder.path or 'the whole repository'} is not a submitter's folder or one "
                         f"below it (<division>/<submitter>/..., the division one of {', '.join(DIVISIONS)}): "
                         "point at open/<submitter> or closed/<submitter> or a system folder in it")
    top = "/" + "/".join(parts[:2])
    if len(parts) >= 4 and parts[2] in PER_SYSTEM + ("systems",):
        system = parts[3].removesuffix(".json")
        return ([f"{top}/{kind}/{system}/" for kind in PER_SYSTEM] + [f"{top}/systems/{system}.json"]
                + [f"{top}/{name}" for name in SUBMITTER_FILES])
    return [f"{top}/"]


def _git(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    try:
        return run_git(args, timeout=timeout)
    except FileNotFoundError:
        raise FetchError("git is not installed: apt-get install git, or fetch the folder yourself and give "
                         "--from=FOLDER") from None
    except subprocess.TimeoutExpired:
        raise FetchError(f"git {args[0]} took longer than {timeout:.0f} s: fetch the folder yourself and "
                         "give --from=FOLDER") from None


def fetch(url: str, dest: str, timeout: float = 1800) -> str:
    """The folder at `url`, sparsely checked out into `dest` (a repository root holding the division
    folder); `dest` itself is returned when it is already there."""
    folder = parse(url)
    wanted = patterns(folder)
    if os.path.isdir(dest):
        return dest
    tmp = f"{dest}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        steps = (["clone", "--quiet", "--filter=blob:none", "--no-checkout", "--depth", "1", "--branch", folder.ref,
                  folder.repo, tmp],
                 ["-C", tmp, "sparse-checkout", "set", "--no-cone", *wanted],
                 ["-C", tmp, "checkout", "--quiet", folder.ref])
        for args in steps:
            res = _git(args, timeout)
            if res.returncode != 0:
                last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
                hint = ("no branch or tag of that name there" if "not found" in res.stderr.lower() else
                        "no network, or a wrong address? fetch the folder yourself and give --from=FOLDER")
                raise FetchError(f"--from={url}: git {args[0] if args[0] != '-C' else args[2]} failed: {last} ({hint})")
        shutil.rmtree(os.path.join(tmp, ".git"), ignore_errors=True)
        if not os.path.isdir(os.path.join(tmp, *folder.parts[:2])):
            raise FetchError(f"--from={url}: {folder.path} is not in {folder.repo} at {folder.ref}")
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
