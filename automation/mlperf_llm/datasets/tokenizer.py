"""Tokenizers for building data sets without torch: a Hugging Face `tokenizer.json` through the
`tokenizers` library, and the model's chat template rendered the way transformers renders it."""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .schema import DatasetError

LLAMA2_PROMPT_SYSTEM = "<s>[INST] <<SYS>>\n{}\n<</SYS>>\n\n{} [/INST]"
LLAMA2_PROMPT_NO_SYSTEM = "<s>[INST] {} [/INST]"


def llama2_prompt(system_prompt: str, question: str) -> str:
    """The OpenOrca/llama2-70b prompt (reference processorca.py `format_llama_input`)."""
    if system_prompt:
        return LLAMA2_PROMPT_SYSTEM.format(system_prompt, question)
    return LLAMA2_PROMPT_NO_SYSTEM.format(question)


def _token_text(value):
    if isinstance(value, dict):  # tokenizer_config.json may store AddedToken dicts
        return value.get("content")
    return value


def _raise_exception(message):
    raise DatasetError(f"chat template refused the messages: {message}")


@functools.lru_cache(maxsize=8)
def _compiled(template: str):
    """A chat template compiled once (jinja's sandbox, as transformers renders it): a data set of
    thousands of rows renders each with the same template (compiling it per row cost ~5 ms a row)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.ext import loopcontrols
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = _raise_exception
    return env.from_string(template)


@dataclass
class ModelTokenizer:
    """A model folder's tokenizer: `encode` as `tokenizer(text)["input_ids"]`, `decode`, `chat_prompt`."""
    folder: Path
    backend: object
    config: dict
    chat_template: str | None

    @classmethod
    def from_folder(cls, folder) -> "ModelTokenizer":
        folder = Path(folder)
        tj = folder / "tokenizer.json"
        if not tj.is_file():
            raise DatasetError(f"tokenizer folder {folder} has no tokenizer.json; pass the folder of a Hugging "
                               "Face checkpoint (the converted embedded model, or the Llama-2 model).")
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise DatasetError("the `tokenizers` package is missing; install it (pip install tokenizers).") from e
        config = {}
        cfg = folder / "tokenizer_config.json"
        if cfg.is_file():
            config = json.loads(cfg.read_text())
        template = config.get("chat_template")
        jinja = folder / "chat_template.jinja"
        if template is None and jinja.is_file():
            template = jinja.read_text()
        if isinstance(template, list):  # named templates: take the default one
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        return cls(folder=folder, backend=Tokenizer.from_file(str(tj)), config=config, chat_template=template)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self.backend.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def special(self, name: str):
        return _token_text(self.config.get(name))

    def messages(self, system_prompt: str, question: str) -> list[dict]:
        """OpenOrca convention: no system message when the system prompt is empty."""
        msgs = [{"role": "system", "content": system_prompt}] if system_prompt else []
        return msgs + [{"role": "user", "content": question}]

    def chat_prompt(self, system_prompt: str, question: str) -> str:
        """Render the chat template with a generation prompt, as transformers' apply_chat_template does."""
        if not self.chat_template:
            raise DatasetError(f"tokenizer in {self.folder} has no chat template (tokenizer_config.json "
                               "`chat_template` or chat_template.jinja); convert the model with its template.")
        return _compiled(self.chat_template).render(
            messages=self.messages(system_prompt, question), add_generation_prompt=True,
            bos_token=self.special("bos_token") or "", eos_token=self.special("eos_token") or "",
            pad_token=self.special("pad_token") or "", unk_token=self.special("unk_token") or "")

    def chat_ids(self, system_prompt: str, question: str) -> list[int]:
        """Token ids of the chat prompt (the template carries the special tokens, so none are added)."""
        return self.encode(self.chat_prompt(system_prompt, question), add_special_tokens=False)

    def fingerprint(self) -> str:
        """sha256 over tokenizer.json and the chat template: names the exact tokenizer a data set used."""
        h = hashlib.sha256((self.folder / "tokenizer.json").read_bytes())
        h.update((self.chat_template or "").encode())
        return h.hexdigest()
