"""Getting a Hugging Face checkpoint and checking it, by one of three routes (the model steps'
run.sh calls `main`; which repository a step means is in families.py).

Routes: the Hugging Face hub through `huggingface_hub.snapshot_download` (honours `HF_ENDPOINT`;
the token comes from `HF_TOKEN` or a stored `hf auth login` and is never printed, logged or
written anywhere), the MLCommons R2 downloader (reusing `mlperf_llm.datasets.r2`), or a folder the
user already has (`--checkpoint=DIR`, checked, never copied).

A download grows in `<dest>.partial/` (huggingface_hub resumes files there with Range requests);
only after every file matches the hub's checksums (sha256 for LFS files, git blob ids for the
rest) and the folder passes `checkpoint.check_checkpoint` is it renamed to `<dest>`.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..files import write_atomic
from .checkpoint import CheckpointReport, check_checkpoint
from .errors import ModelError

DEFAULT_ENDPOINT = "https://huggingface.co"
TOKEN_ENV = "HF_TOKEN"
# weights stored twice in some repositories; with safetensors present the others are skipped
REDUNDANT_WEIGHTS = ["*.bin", "*.pth", "*.pt", "*.h5", "*.msgpack", "*.ckpt", "original/*", "consolidated.*"]


@dataclass(frozen=True)
class HubRequest:
    repo_id: str
    dest: str
    revision: str = "main"
    endpoint: str | None = None            # default: $HF_ENDPOINT, else the public hub
    token: str | None = field(default=None, repr=False)   # default: $HF_TOKEN / stored login
    max_workers: int = 4
    verify: bool = True                    # hash every file against the hub's listing


@dataclass(frozen=True)
class ModelResult:
    path: str
    source: str                            # "hf:<repo>@<commit>", "r2:<uri>", "local"
    report: CheckpointReport
    reused: bool = False


def endpoint_of(req: HubRequest) -> str:
    return (req.endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _token(req: HubRequest) -> str | None:
    return req.token or os.environ.get(TOKEN_ENV) or None


def gated_message(repo_id: str, endpoint: str, had_token: bool) -> str:
    page = f"{endpoint}/{repo_id}"
    if had_token:
        return (f"{repo_id} is gated and the token in {TOKEN_ENV} has no access to it: open {page}, log in "
                "as the token's owner, accept the license and wait for the grant; then run again. "
                "Or use a local copy (--checkpoint=DIR) or the MLCommons R2 route (_r2).")
    return (f"{repo_id} is gated: request access at {page} (log in and accept the license), create a read "
            f"token at {endpoint}/settings/tokens, and set {TOKEN_ENV}=<token> in the environment (or run "
            "`hf auth login`); then run again. Or use a local copy (--checkpoint=DIR) or the MLCommons R2 "
            "route (_r2).")


def transport_errors() -> tuple:
    """The HTTP client's own errors (huggingface_hub 1.x uses httpx, 2.x httpx2)."""
    import importlib
    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).HTTPError)
        except (ImportError, AttributeError):
            pass
    return tuple(found)


def _ignore_patterns(api, req: HubRequest, token) -> list[str]:
    files = [f.path for f in api.list_repo_tree(req.repo_id, recursive=True, revision=req.revision, token=token)
             if hasattr(f, "size")]
    return REDUNDANT_WEIGHTS if any(f.endswith(".safetensors") for f in files) else []


def _check_commit(req: HubRequest, commit: str, endpoint: str) -> None:
    """A revision asked for by its commit must come back as that commit: a mirror that answers with
    another (as MLCommons storage once served DeepSeek-R1-0528 for R1: mlcommons/inference#2593) would
    otherwise hand over another model under the pinned name."""
    asked = req.revision.lower()
    if re.fullmatch(r"[0-9a-f]{40}", asked) and (commit or "").lower() != asked:
        raise ModelError(f"{req.repo_id}: asked {endpoint} for commit {asked}, it answered with commit {commit}: "
                         "another revision, not the one pinned; nothing was downloaded. Fix: use the Hugging Face "
                         "hub (unset HF_ENDPOINT) or a mirror that has that commit, or pass --revision= to take "
                         "another one on purpose.")


def _verify(api, req: HubRequest, commit: str, folder: Path, ignore: list[str], token) -> int:
    from huggingface_hub.utils import filter_repo_objects
    result = api.verify_repo_checksums(req.repo_id, revision=commit, local_dir=folder, token=token)
    wanted = set(filter_repo_objects(result.missing_paths, ignore_patterns=ignore or None))
    if result.mismatches:
        bad = result.mismatches[0]
        for m in result.mismatches:
            (folder / m["path"]).unlink(missing_ok=True)     # never keep a corrupt file for a resume
        raise ModelError(f"{req.repo_id}@{commit[:12]}: {len(result.mismatches)} file(s) do not match the hub's "
                         f"checksums ({bad['path']}: {bad['algorithm']} {bad['actual'][:12]}.. expected "
                         f"{bad['expected'][:12]}..); they were deleted: run again to fetch them anew")
    if wanted:
        raise ModelError(f"{req.repo_id}@{commit[:12]}: {len(wanted)} file(s) missing after the download "
                         f"({', '.join(sorted(wanted)[:4])}); run again (it resumes)")
    return result.checked_count


def download_snapshot(req: HubRequest, log=print) -> ModelResult:
    """Snapshot `req.repo_id` into `req.dest`, resumable, verified, then renamed into place."""
    try:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                            RepositoryNotFoundError, RevisionNotFoundError)
    except ImportError:
        raise ModelError("downloading from the hub needs huggingface_hub; fix: pip install huggingface_hub") from None
    dest = Path(req.dest).absolute()
    if dest.is_dir():
        log(f"{dest} exists; checking it instead of downloading")
        return ModelResult(str(dest), "local", check_checkpoint(dest), reused=True)
    endpoint, token = endpoint_of(req), _token(req)
    partial = dest.with_name(dest.name + ".partial")
    api = HfApi(endpoint=endpoint, token=token)
    try:
        commit = api.model_info(req.repo_id, revision=req.revision, token=token).sha
        _check_commit(req, commit, endpoint)
        ignore = _ignore_patterns(api, req, token)
        log(f"downloading {req.repo_id}@{commit[:12]} from {endpoint} into {partial}"
            f"{' (token from ' + TOKEN_ENV + ')' if token else ' (no token)'}")
        snapshot_download(req.repo_id, revision=commit, local_dir=partial, endpoint=endpoint, token=token,
                          ignore_patterns=ignore or None, max_workers=req.max_workers)
        checked = _verify(api, req, commit, partial, ignore, token) if req.verify else 0
    except GatedRepoError:
        raise ModelError(gated_message(req.repo_id, endpoint, bool(token))) from None
    except RevisionNotFoundError:
        raise ModelError(f"{req.repo_id} has no revision {req.revision!r} at {endpoint}; fix --revision") from None
    except RepositoryNotFoundError:
        hint = "" if token else (f" If it is private or gated, set {TOKEN_ENV} to a token that can read it.")
        raise ModelError(f"{req.repo_id} was not found at {endpoint} (check --repo_id and HF_ENDPOINT).{hint}") from None
    except LocalEntryNotFoundError as e:
        raise ModelError(f"cannot reach {endpoint} for {req.repo_id}: {str(e).splitlines()[0]}; check the network "
                         f"or HF_ENDPOINT. Files already fetched stay in {partial} and the next run resumes.") from None
    except (HfHubHTTPError, OSError, *transport_errors()) as e:
        raise ModelError(f"downloading {req.repo_id} from {endpoint} failed: {str(e).splitlines()[0]}. Files "
                         f"already fetched stay in {partial} and the next run resumes; {dest} was not "
                         "created.") from None
    report = check_checkpoint(partial)
    shutil.rmtree(partial / ".cache", ignore_errors=True)    # huggingface_hub's resume metadata
    os.replace(partial, dest)
    log(f"{req.repo_id}@{commit[:12]}: {checked} files verified, {len(report.shards)} weight file(s), "
        f"{report.weight_bytes / 1e9:.2f} GB at {dest}")
    return ModelResult(str(dest), f"hf:{req.repo_id}@{commit}", replace(report, path=str(dest)))


def download_r2(uri: str, dest, token: str | None = None, log=print) -> ModelResult:
    """The MLCommons R2 route (the data sets' resumable, MD5-checked downloader), then the check."""
    from mlperf_llm.datasets.download import DownloadError
    from mlperf_llm.datasets.r2 import download_dataset
    dest = Path(dest).absolute()
    if dest.is_dir():
        return ModelResult(str(dest), "local", check_checkpoint(dest), reused=True)
    partial = dest.with_name(dest.name + ".partial")
    try:
        download_dataset(uri, partial, token=token, log=log)
    except DownloadError as e:
        raise ModelError(f"R2 download of {uri} failed: {e}") from None
    configs = sorted(partial.rglob("config.json"), key=lambda p: len(p.parts))
    if not configs:
        raise ModelError(f"{uri}: the downloaded files hold no config.json; not a Hugging Face checkpoint")
    report = check_checkpoint(configs[0].parent)
    os.replace(partial, dest)
    path = dest / configs[0].parent.relative_to(partial)
    return ModelResult(str(path), f"r2:{uri}", replace(report, path=str(path)))


def use_local(path) -> ModelResult:
    """--checkpoint=DIR: check a folder the user has; nothing is copied."""
    return ModelResult(str(Path(path).absolute()), "local", check_checkpoint(path))


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    p = argparse.ArgumentParser(description="Get a Hugging Face checkpoint (hub, MLCommons R2 or local) and check it")
    p.add_argument("--dest", help="folder to create (hub and r2 routes)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--repo-id")
    g.add_argument("--r2-uri")
    g.add_argument("--checkpoint")
    p.add_argument("--revision", default="main")
    p.add_argument("--no-verify", action="store_true", help="skip hashing against the hub's checksums")
    p.add_argument("--result-json", help="write the result here (no secrets in it)")
    a = p.parse_args(argv)
    try:
        if a.checkpoint:
            res = use_local(a.checkpoint)
        elif not a.dest:
            raise ModelError("--dest is required with --repo-id or --r2-uri")
        elif a.r2_uri:
            res = download_r2(a.r2_uri, a.dest, token=os.environ.get("CM_R2_ACCESS_TOKEN"))
        else:
            res = download_snapshot(HubRequest(a.repo_id, a.dest, revision=a.revision, verify=not a.no_verify))
    except ModelError as e:
        print(f"error: {e}", file=os.sys.stderr)
        return 1
    out = {"path": res.path, "source": res.source, "reused": res.reused, "report": res.report.__dict__}
    text = json.dumps(out, indent=2, default=list)
    if a.result_json:
        write_atomic(a.result_json, text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
