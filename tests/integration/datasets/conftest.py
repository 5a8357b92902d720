import hashlib
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
sys.path.insert(0, str(FIXTURES))


class FileServer:
    """Serves `files` (path -> bytes) on 127.0.0.1 with Range support and scripted faults:
    drop[path] = [n, ...]: for each of the next requests of path, send n body bytes and hang up;
    no_range: ignore Range headers (answer 200 with the whole file)."""

    def __init__(self):
        self.files, self.drop, self.no_range, self.log = {}, {}, False, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                server.log.append((self.path, self.headers.get("Range"), dict(self.headers)))
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                start, status = 0, 200
                rng = self.headers.get("Range")
                if rng and not server.no_range:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    status = 206
                self.send_response(status)
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                plan = server.drop.get(self.path) or []
                if plan:
                    n = plan.pop(0)
                    self.wfile.write(body[start:start + n])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body[start:])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def ranges(self, path):
        return [r for p, r, _ in self.log if p == path]

    def publish_r2(self, files, name, private=False):
        """Lay out a data set the way the R2 bucket does: `/metadata/<name>.uri` (`.url` when private)
        holds the base URL, `/metadata/<name>.md5` lists `<md5>  ./<path>`, the files (path -> bytes)
        lie under `/data/<name>/`; returns the metadata URI."""
        ext = ".url" if private else ".uri"
        self.files[f"/metadata/{name}{ext}"] = f"{self.url}/data/{name}\n".encode()
        self.files[f"/metadata/{name}.md5"] = "".join(
            f"{hashlib.md5(b).hexdigest()}  ./{p}\n" for p, b in files.items()).encode()
        for p, b in files.items():
            self.files[f"/data/{name}/{p}"] = b
        return f"{self.url}/metadata/{name}{ext}"


@pytest.fixture
def server():
    s = FileServer()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()
