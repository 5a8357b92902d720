"""The mlcommons/inference sources: a shallow clone at a round's tag or commit (mlperf_llm.rounds
`src_ref`), or a checkout the user gives."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass

from ..gitcmd import run_git

DEFAULT_URL = "https://github.com/mlcommons/inference"
CHECKER = os.path.join("tools", "submission", "submission_checker.py")              # up to v5.1
CHECKER_PACKAGE = os.path.join("tools", "submission", "submission_checker", "main.py")  # v6.0 on (master)
LLAMA2 = os.path.join("language", "llama2-70b")


class InferenceSrcError(RuntimeError):
    git_error = ""      # git's own last line, where a clone failed


@dataclass(frozen=True)
class InferenceSource:
    path: str
    tag: str               # the tag HEAD is at ("" if none / not a git checkout)
    commit: str            # HEAD commit ("" if not a git checkout)

    @property
    def checker(self) -> str:
        """The checker script (up to v5.1), else the package's main.py (v6.0 on)."""
        script = os.path.join(self.path, CHECKER)
        package = os.path.join(self.path, CHECKER_PACKAGE)
        return script if os.path.isfile(script) or not os.path.isfile(package) else package

    def at(self, ref: str) -> bool:
        """HEAD is at `ref` (a tag, or a commit given in full or abbreviated)."""
        return bool(ref) and (self.tag == ref or (bool(self.commit) and self.commit.startswith(ref)))

    @property
    def llama2_dir(self) -> str:
        return os.path.join(self.path, LLAMA2)

    @property
    def mlperf_conf(self) -> str:
        """loadgen/mlperf.conf (v5.x), else the top-level mlperf.conf (v4.1)."""
        for p in (os.path.join(self.path, "loadgen", "mlperf.conf"), os.path.join(self.path, "mlperf.conf")):
            if os.path.exists(p):
                return p
        return ""


def _git(args: list[str], cwd: str | None = None, timeout: float = 1800) -> subprocess.CompletedProcess:
    try:
        return run_git(args, cwd, timeout)
    except FileNotFoundError as e:
        raise InferenceSrcError("git is not installed: apt-get install git, or give --src_path=DIR") from e


def checkout_problem(path: str, flag: str = "--src_path") -> str:
    """Why `path` is not an mlcommons/inference checkout, naming the input `flag` it came from ("" where
    it looks like one: a loadgen folder and the submission checker)."""
    if not os.path.isdir(path):
        return f"{flag}={path}: no such folder; give a checkout of mlcommons/inference"
    missing = [p for p in ("loadgen",) if not os.path.exists(os.path.join(path, p))]
    if not any(os.path.exists(os.path.join(path, p)) for p in (CHECKER, CHECKER_PACKAGE)):
        missing.append(f"{CHECKER} (or {CHECKER_PACKAGE})")
    return (f"{flag}={path} is not an mlcommons/inference checkout: {', '.join(missing)} missing; give a "
            "checkout of mlcommons/inference at the round's revision") if missing else ""


def describe(path: str) -> InferenceSource:
    """Check that path looks like mlcommons/inference and read its tag and commit."""
    path = os.path.abspath(path)
    problem = checkout_problem(path)
    if problem:
        raise InferenceSrcError(problem)
    commit = _git(["rev-parse", "HEAD"], cwd=path)
    tag = _git(["describe", "--tags", "--exact-match", "HEAD"], cwd=path)
    return InferenceSource(path=path, tag=tag.stdout.strip() if tag.returncode == 0 else "",
                           commit=commit.stdout.strip() if commit.returncode == 0 else "")


def is_commit(ref: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-f]{7,40}", ref or ""))


def _clone_commit(url: str, commit: str, tmp: str) -> subprocess.CompletedProcess:
    """A shallow fetch of one commit (git clone --branch takes only tags and branches)."""
    for args in (["init", "-q", tmp], ["-C", tmp, "fetch", "--depth", "1", url, commit],
                 ["-C", tmp, "checkout", "-q", "FETCH_HEAD"]):
        res = _git(args)
        if res.returncode != 0:
            return res
    return res


def clone_at_tag(url: str, tag: str, dest: str) -> InferenceSource:
    """`git clone --depth 1 --branch TAG` (or a shallow fetch of a commit) into a temp folder beside
    dest, then rename it into place."""
    if os.path.exists(dest):
        return describe(dest)
    tmp = f"{dest}.tmp-{uuid.uuid4().hex[:8]}"
    res = (_clone_commit(url, tag, tmp) if is_commit(tag) else
           _git(["clone", "--depth", "1", "--branch", tag, "--single-branch", url, tmp]))
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        err = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"
        hint = ("the tag does not exist there" if "not found" in res.stderr.lower() or "remote branch" in
                res.stderr.lower() else "no network or wrong URL? give a local checkout: --inference_src=DIR "
                "with run-mlperf-inference-app, --src_path=DIR with get-mlperf-inference-src")
        error = InferenceSrcError(f"git clone of {url} at {tag} failed: {err} ({hint})")
        error.git_error = err
        raise error
    os.replace(tmp, dest)
    return describe(dest)


@dataclass(frozen=True)
class SourceChoice:
    source: InferenceSource
    notes: tuple[str, ...]     # how it was chosen, to print
    fallback: bool = False     # an override could not be had: a later run should try it again


def get_source(url: str, ref: str, dest: str, src_path: str = "",
               official_url: str = DEFAULT_URL, round_tag: str = "") -> SourceChoice:
    """The checkout a run uses, and how it was chosen.

    A fork or branch asked for (`_repo.URL`, `_branch.NAME`: url or ref other than official_url at
    round_tag) is cloned first, even when src_path is given. Where it cannot be cloned the run goes
    on without it, with src_path, else official_url at round_tag, says so, and marks the choice a
    fallback. Otherwise src_path is used as it is (a tag other than the round's is noted), else
    official_url at round_tag is cloned."""
    round_tag = round_tag or ref
    if url != official_url or ref != round_tag:
        try:
            return SourceChoice(clone_at_tag(url, ref, dest), (f"using {url} at {ref}, as the override asks",))
        except InferenceSrcError as e:
            ours = f"the checkout given, {os.path.abspath(src_path)}" if src_path else f"{official_url} at {round_tag}"
            note = (f"the override {url} at {ref} could not be cloned ({e.git_error or e}); "
                    f"continuing without it, with {ours}")
            chosen = _given_or_official(official_url, round_tag, dest, src_path)
            return SourceChoice(chosen.source, (note,) + chosen.notes, fallback=True)
    return _given_or_official(official_url, round_tag, dest, src_path)


def _given_or_official(official_url: str, round_tag: str, dest: str, src_path: str) -> SourceChoice:
    if src_path:
        src = describe(src_path)
        if not src.at(round_tag):
            return SourceChoice(src, (f"{src.path} is at {src.tag or src.commit[:12] or 'an unknown commit'}, "
                                      f"not {round_tag}",))
        return SourceChoice(src, ())
    return SourceChoice(clone_at_tag(official_url, round_tag, dest), ())
