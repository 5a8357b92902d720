"""The MLCommons R2 route for the model (the data sets' downloader) against a loopback server."""
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mlperf_llm.models import hf_hub
from mlperf_llm.models.errors import ModelError
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


def r2_files(url: str, corrupt: str = "") -> dict:
    files = checkpoint_files()
    served = {f"/data/llama-2-70b-chat-hf/{p}": (d if p != corrupt else d[:-1] + b"X") for p, d in files.items()}
    md5 = "".join(f"{hashlib.md5(d).hexdigest()}  ./llama-2-70b-chat-hf/{p}\n" for p, d in files.items())
    served["/metadata/llama-2-70b-chat-hf.uri"] = f"{url}/data\n".encode()
    served["/metadata/llama-2-70b-chat-hf.md5"] = md5.encode()
    return served


def test_r2_route_downloads_checks_and_renames(tmp_path):
    with StaticServer({}) as s:
        s.files.update(r2_files(s.url))
        res = hf_hub.download_r2(f"{s.url}/metadata/llama-2-70b-chat-hf.uri", tmp_path / "ckpt", log=lambda m: None)
    assert res.path == str(tmp_path / "ckpt" / "llama-2-70b-chat-hf") and res.source.startswith("r2:")
    assert res.report.path == res.path and res.report.tensors == 4
    assert not (tmp_path / "ckpt.partial").exists()


def test_r2_md5_mismatch_publishes_nothing(tmp_path):
    with StaticServer({}) as s:
        s.files.update(r2_files(s.url, corrupt="model-00002-of-00002.safetensors"))
        with pytest.raises(ModelError, match="R2 download of .* failed: .*md5"):
            hf_hub.download_r2(f"{s.url}/metadata/llama-2-70b-chat-hf.uri", tmp_path / "ckpt", log=lambda m: None)
    assert not (tmp_path / "ckpt").exists()
    assert not (tmp_path / "ckpt.partial" / "llama-2-70b-chat-hf" / "model-00002-of-00002.safetensors").exists()
