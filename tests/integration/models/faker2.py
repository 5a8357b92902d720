"""A loopback stand-in for MLCommons R2: a static file server, and the files an R2 metadata URI
names (`/metadata/<name>.uri` holding the base URL, `/metadata/<name>.md5` the checksum list,
`/data/<name>/...` the checkpoint)."""
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tinyckpt import checkpoint_files


class StaticServer:
    def __init__(self, files: dict):
        self.files = files
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *a):
        self.httpd.shutdown()
        self.httpd.server_close()


def r2_files(url: str, name: str, folder: str, corrupt: str = "") -> dict:
    """The served files of metadata `<name>.uri` whose checksum list puts the tiny checkpoint in
    `folder/` (`corrupt`: one file served with its last byte changed)."""
    files = checkpoint_files()
    served = {f"/data/{folder}/{p}": (d if p != corrupt else d[:-1] + b"X") for p, d in files.items()}
    md5 = "".join(f"{hashlib.md5(d).hexdigest()}  ./{folder}/{p}\n" for p, d in files.items())
    served[f"/metadata/{name}.uri"] = f"{url}/data\n".encode()
    served[f"/metadata/{name}.md5"] = md5.encode()
    return served
