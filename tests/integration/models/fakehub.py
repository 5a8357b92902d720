"""A loopback stand-in for the Hugging Face hub, speaking as much of its protocol as
`huggingface_hub.snapshot_download` and `HfApi.verify_repo_checksums` use:

  GET  /api/models/{repo}/revision/{rev}      model info (sha, siblings)
  GET  /api/models/{repo}/tree/{rev}          file listing (size, git blob id, lfs sha256)
  HEAD /{repo}/resolve/{rev}/{path}           X-Repo-Commit, ETag / X-Linked-Etag, sizes
  GET  /{repo}/resolve/{rev}/{path}           the bytes, with `Range: bytes=N-` resumes

and the same for dataset repositories (`/api/datasets/...`, `/datasets/{repo}/resolve/...`).

Gated repositories answer file requests with 401/403 and `X-Error-Code: GatedRepo`, as the hub does.
Faults for the tests: `drop_once` (close the connection after N bytes, once), `drop_always`,
`corrupt` (serve other bytes of the same size). Every request is recorded (never the token).
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".model")


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    files: dict                       # path -> bytes
    gated: bool = False
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    drop_once: dict = field(default_factory=dict)     # path -> bytes sent before the first drop
    drop_always: dict = field(default_factory=dict)   # path -> bytes sent before every drop
    corrupt: dict = field(default_factory=dict)       # path -> bytes served instead (same size)

    def is_lfs(self, path: str) -> bool:
        return path.endswith(LFS_SUFFIXES)

    def etag(self, path: str) -> str:
        data = self.files[path]
        return hashlib.sha256(data).hexdigest() if self.is_lfs(path) else git_blob_sha1(data)


class FakeHub:
    def __init__(self, repos: dict, tokens: set | None = None):
        self.repos = repos
        self.tokens = tokens or set()
        self.requests: list[dict] = []
        self.auth_headers_seen: list[bool] = []
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                hub._handle(self, head=True)

            def do_GET(self):
                hub._handle(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # --- protocol -------------------------------------------------------------------------------
    def _send_json(self, h, code: int, obj, headers: dict | None = None, head: bool = False):
        body = json.dumps(obj).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _error(self, h, code: int, error_code: str, message: str, head: bool):
        self._send_json(h, code, {"error": message}, {"X-Error-Code": error_code, "X-Error-Message": message}, head)

    def _find(self, parts: list[str]):
        """parts: path segments after the prefix; the repo id is the first two."""
        repo_id = "/".join(parts[:2])
        return repo_id, self.repos.get(repo_id), parts[2:]

    def _handle(self, h, head: bool):
        url = urlsplit(h.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        auth = h.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        with self._lock:
            self.requests.append({"method": h.command, "path": url.path, "range": h.headers.get("Range"),
                                  "auth": bool(token)})
        if parts[:2] in (["api", "models"], ["api", "datasets"]):
            repo_id, repo, rest = self._find(parts[2:])
            if repo is None:
                return self._error(h, 401, "RepoNotFound", f"Repository Not Found for url: {h.path}.", head)
            if rest[:1] == ["revision"]:
                return self._send_json(h, 200, {"id": repo_id, "modelId": repo_id, "sha": repo.commit,
                                                "private": False, "gated": "manual" if repo.gated else False,
                                                "siblings": [{"rfilename": p} for p in sorted(repo.files)]},
                                       head=head)
            if rest[:1] == ["tree"]:
                listing = []
                for p in sorted(repo.files):
                    data = repo.files[p]
                    entry = {"type": "file", "path": p, "size": len(data), "oid": git_blob_sha1(data)}
                    if repo.is_lfs(p):
                        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                        "pointerSize": 134}
                    listing.append(entry)
                return self._send_json(h, 200, listing, head=head)
            return self._error(h, 404, "EntryNotFound", "unknown api route", head)
        repo_id, repo, rest = self._find(parts[1:] if parts[:1] == ["datasets"] else parts)
        if repo is None or rest[:1] != ["resolve"] or len(rest) < 3:
            return self._error(h, 401, "RepoNotFound", f"Repository Not Found for url: {h.path}.", head)
        path = "/".join(rest[2:])
        if repo.gated and token not in self.tokens:
            if token:
                return self._error(h, 403, "GatedRepo", f"Access to model {repo_id} is restricted and you are not "
                                   "in the authorized list.", head)
            return self._error(h, 401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have "
                               "access to it and be authenticated to access it. Please log in.", head)
        if path not in repo.files:
            return self._error(h, 404, "EntryNotFound", f"{path} does not exist", head)
        data = repo.corrupt.get(path, repo.files[path])
        etag = repo.etag(path)
        start = 0
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[len("bytes="):].split("-")[0] or 0)
        h.send_response(206 if start else 200)
        h.send_header("X-Repo-Commit", repo.commit)
        h.send_header("ETag", f'"{etag}"')
        if repo.is_lfs(path):
            h.send_header("X-Linked-Etag", f'"{etag}"')
            h.send_header("X-Linked-Size", str(len(data)))
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(data) - start))
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if head:
            return
        body = data[start:]
        cut = repo.drop_always.get(path)
        if cut is None and path in repo.drop_once:
            cut = repo.drop_once.pop(path)
        if cut is not None and cut < len(body):
            h.wfile.write(body[:cut])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return
        h.wfile.write(body)
