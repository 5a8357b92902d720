"""LiveCodeBench's problems with their tests, fetched once by the gpt-oss data step (the reference
fetches them from the Hugging Face hub each time it scores; here nothing is fetched while scoring).

The release the reference scores against, `release_v6`, is the files test.jsonl .. test6.jsonl of
the hub's dataset livecodebench/code_generation_lite (LiveCodeBench's lcb_runner loads the same
files for it). The revision asked for (default main) is resolved to its commit, which is recorded;
the files are fetched into a partial folder (resumable), checked against the hub's checksums of that
commit, and only then renamed into place: a partial or corrupt download is never taken for the
release. HF_TOKEN and HF_ENDPOINT are read from the process environment, as the model steps read them.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .schema import DatasetError

REPO = "livecodebench/code_generation_lite"
RELEASES = {"release_v6": ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")}


@dataclass(frozen=True)
class Release:
    files: tuple[Path, ...]
    commit: str
    source: str                   # "hf:<repo>@<commit>"


def fetch_release(dest, release: str = "release_v6", revision: str = "main", log=print) -> Release:
    """The release's files in `dest` (a folder made whole or not at all)."""
    if release not in RELEASES:
        raise DatasetError(f"LiveCodeBench release {release!r} is unknown; known: {', '.join(RELEASES)}")
    names = RELEASES[release]
    dest = Path(dest).absolute()
    if dest.is_dir() and all((dest / n).is_file() for n in names):
        return Release(tuple(dest / n for n in names), (dest / ".commit").read_text().strip()
                       if (dest / ".commit").is_file() else "", f"local {dest}")
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RevisionNotFoundError

    from ..models.hf_hub import transport_errors
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    token = os.environ.get("HF_TOKEN") or None
    partial = dest.with_name(dest.name + ".partial")
    api = HfApi(endpoint=endpoint, token=token)
    try:
        commit = api.dataset_info(REPO, revision=revision).sha
        log(f"fetching LiveCodeBench {release} ({', '.join(names)}) from {REPO}@{commit[:12]} at {endpoint}")
        snapshot_download(REPO, repo_type="dataset", revision=commit, local_dir=partial, endpoint=endpoint,
                          token=token, allow_patterns=list(names))
        check = api.verify_repo_checksums(REPO, repo_type="dataset", revision=commit, local_dir=partial)
    except RevisionNotFoundError:
        raise DatasetError(f"{REPO} has no revision {revision!r} at {endpoint}") from None
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, *transport_errors()) as e:
        raise DatasetError(f"fetching LiveCodeBench's {release} from {endpoint} failed: {str(e).splitlines()[0]}; "
                           f"files already fetched stay in {partial} and the next run resumes (or pass "
                           "--lcb_tests=FILE,... with the release files you have)") from None
    bad = [m for m in check.mismatches if m["path"] in names]
    for m in bad:
        (partial / m["path"]).unlink(missing_ok=True)        # never resumed from
    missing = [n for n in names if not (partial / n).is_file()]
    if bad or missing:
        what = (f"{bad[0]['path']} does not match the hub's checksum" if bad else f"{missing[0]} is missing")
        raise DatasetError(f"LiveCodeBench {release} from {REPO}@{commit[:12]}: {what}; run again (it fetches "
                           "what is missing or was deleted)")
    shutil.rmtree(partial / ".cache", ignore_errors=True)     # huggingface_hub's resume metadata
    (partial / ".commit").write_text(commit + "\n")
    os.replace(partial, dest)
    return Release(tuple(dest / n for n in names), commit, f"hf:{REPO}@{commit}")
