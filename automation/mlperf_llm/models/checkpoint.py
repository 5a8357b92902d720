"""Integrity check of a Hugging Face checkpoint folder, however it was obtained.

Checks, cheapest first: config.json parses and names a model type; every weight shard the index
lists is present; every safetensors file is as long as its own header says (a truncated shard
fails here without hashing hundreds of GB); tokenizer files are present; and, when transformers
is importable, the config and the tokenizer load through it as a user's code would load them.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ModelError

INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
SINGLE_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")


@dataclass(frozen=True)
class CheckpointReport:
    path: str
    model_type: str
    architectures: tuple
    shards: tuple                  # weight files, relative names
    weight_bytes: int
    tensors: int                   # tensors named in safetensors headers (0 for .bin only)
    quantization: str              # quant_method of config.json, "" when not quantized
    tokenizer_files: tuple
    loaded_with: str = ""          # "transformers X.Y" when config and tokenizer were loaded
    notes: tuple = field(default=())


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelError(f"{path.parent}: no {path.name}; this is not a complete Hugging Face checkpoint "
                         f"({what}); fix: download it again or point --checkpoint at the right folder") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelError(f"{path}: not valid JSON ({e}); the file is damaged: download it again") from None


def safetensors_tensor_count(path: Path) -> int:
    """Number of tensors in a safetensors file, after checking its length against its header."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ModelError(f"{path}: {size} bytes, too short for a safetensors file; download it again")
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, 100 << 20):
            raise ModelError(f"{path}: header length {n} does not fit in a {size}-byte file; the file is damaged")
        try:
            header = json.loads(f.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ModelError(f"{path}: unreadable safetensors header; the file is damaged: download it again") from None
    ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    want = 8 + n + (max(ends) if ends else 0)
    if size != want:
        raise ModelError(f"{path}: {size} bytes but its header describes {want}; the file is truncated or "
                         "damaged: download it again")
    return len(ends)


def _weight_files(root: Path, notes: list) -> tuple[list[str], dict]:
    for name in INDEX_FILES:
        if (root / name).is_file():
            index = _read_json(root / name, "weight index")
            weight_map = index.get("weight_map") or {}
            if not weight_map:
                raise ModelError(f"{root / name}: empty weight_map; the index is damaged: download it again")
            shards = sorted(set(weight_map.values()))
            missing = [s for s in shards if not (root / s).is_file()]
            if missing:
                raise ModelError(f"{root}: {len(missing)} of {len(shards)} shards listed in {name} are missing "
                                 f"({', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}); the download "
                                 "is incomplete: run the step again (it resumes)")
            return shards, weight_map
    singles = [n for n in SINGLE_FILES if (root / n).is_file()]
    if not singles:
        raise ModelError(f"{root}: no weights (none of {', '.join(INDEX_FILES + SINGLE_FILES)}); "
                         "fix: download the checkpoint again or point --checkpoint at the right folder")
    if len(singles) > 1:
        notes.append(f"both {singles[0]} and {singles[1]}; loaders prefer {singles[0]}")
    return singles[:1], {}


def check_checkpoint(path, load: bool = True) -> CheckpointReport:
    """Check the folder; raise ModelError naming the first problem. `load` also loads the config
    and the tokenizer with transformers when it is importable."""
    root = Path(path)
    if not root.is_dir():
        raise ModelError(f"checkpoint folder {root} does not exist; fix: pass an existing folder")
    notes: list[str] = []
    config = _read_json(root / "config.json", "model configuration")
    model_type = config.get("model_type")
    if not model_type:
        raise ModelError(f"{root / 'config.json'}: no model_type; this is not a transformers model config")
    shards, weight_map = _weight_files(root, notes)
    tensors = 0
    for s in shards:
        if s.endswith(".safetensors"):
            tensors += safetensors_tensor_count(root / s)
        elif (root / s).stat().st_size == 0:
            raise ModelError(f"{root / s}: empty weight file; download it again")
    if weight_map and all(s.endswith(".safetensors") for s in shards) and tensors < len(weight_map):
        raise ModelError(f"{root}: the index names {len(weight_map)} tensors, the shards hold {tensors}; "
                         "a shard is from another revision: download the checkpoint again")
    tok_files = tuple(n for n in TOKENIZER_FILES if (root / n).is_file())
    if not tok_files:
        raise ModelError(f"{root}: no tokenizer ({' or '.join(TOKENIZER_FILES)}); fix: download the "
                         "tokenizer files too (do not filter them out)")
    quant = (config.get("quantization_config") or {}).get("quant_method", "")
    loaded = _load_with_transformers(root) if load else ""
    if load and not loaded:
        notes.append("transformers is not importable here: config and tokenizer were checked as files only")
    return CheckpointReport(path=str(root), model_type=model_type,
                            architectures=tuple(config.get("architectures") or ()), shards=tuple(shards),
                            weight_bytes=sum((root / s).stat().st_size for s in shards), tensors=tensors,
                            quantization=str(quant), tokenizer_files=tok_files, loaded_with=loaded,
                            notes=tuple(notes))


def _load_with_transformers(root: Path) -> str:
    try:
        import transformers
        from transformers import AutoConfig, AutoTokenizer
    except ImportError:
        return ""
    try:
        AutoConfig.from_pretrained(root)
    except Exception as e:  # transformers raises many types; the message is what matters
        raise ModelError(f"{root}: transformers {transformers.__version__} cannot load config.json: {e}") from None
    try:
        tok = AutoTokenizer.from_pretrained(root)
        if not tok("Hello").input_ids:
            raise ValueError("it encodes 'Hello' to no tokens")
    except Exception as e:
        raise ModelError(f"{root}: transformers {transformers.__version__} cannot load the tokenizer: {e}") from None
    return f"transformers {transformers.__version__}"
