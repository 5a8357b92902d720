"""The rclone route (older MLCommons instructions): `rclone copy <remote>:<bucket path>/<file> <dir>`.

The remote must already be configured by the user (`rclone config create mlc-inference s3 ...` as the
MLCommons llama2-70b README shows); this project ships no credentials. rclone checks sizes and hashes
while copying; the copy lands in a temporary folder and is moved into place only when rclone succeeds.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .download import DownloadError

OPENORCA_REMOTE = "mlc-inference:mlcommons-inference-wg-public/open_orca"


def rclone_binary(rclone: str | None = None) -> str:
    path = shutil.which(rclone or os.environ.get("CM_RCLONE_BIN", "rclone"))
    if not path:
        raise DownloadError("rclone is not installed; install it (apt-get install rclone) or use the default "
                            "R2 downloader route (_r2-downloader).")
    return path


def check_remote(remote_path: str, rclone: str | None = None) -> str:
    binary = rclone_binary(rclone)
    remote = remote_path.split(":", 1)[0] + ":"
    out = subprocess.run([binary, "listremotes"], capture_output=True, text=True)
    if remote not in out.stdout.split():
        raise DownloadError(f"rclone has no remote {remote!r} configured (has: {out.stdout.split() or 'none'}). "
                            "Configure it as the MLCommons llama2-70b README says "
                            f"(`rclone config create {remote[:-1]} s3 provider=Cloudflare ...`), then run again.")
    return binary


def copy_files(remote_dir: str, names: list[str], dest_dir, rclone: str | None = None) -> list[Path]:
    """Copy `names` from `remote_dir` into dest_dir; nothing appears in dest_dir unless all succeed."""
    binary = check_remote(remote_dir, rclone)
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".rclone-", dir=dest_dir) as tmp:
        for name in names:
            cmd = [binary, "copy", f"{remote_dir.rstrip('/')}/{name}", tmp, "--checksum", "--retries", "5"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0 or not (Path(tmp) / name).is_file():
                raise DownloadError(f"`{' '.join(cmd[:4])} ...` failed (exit {r.returncode}): "
                                    f"{(r.stderr or r.stdout).strip()[-600:]}")
        out = []
        for name in names:
            os.replace(Path(tmp) / name, dest_dir / name)
            out.append(dest_dir / name)
    return out
