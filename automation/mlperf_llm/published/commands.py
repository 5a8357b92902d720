"""Command lines in a published folder's documents: the CM or MLC command a measurement README
records (`cm run script ...`, `cmr ...`, `mlcr ...`), and how the vLLM server was started (`vllm serve
...`, `python -m vllm.entrypoints.openai.api_server ...`), with shell continuations joined."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

KINDS = (            # (kind, what a line starts with after an optional prompt and `!`)
    ("cm", re.compile(r"^(?:cm run script|cmr)\b")),
    ("mlc", re.compile(r"^(?:mlcr|mlc run script)\b")),
    ("vllm", re.compile(r"^(?:vllm serve|python3? -m vllm\.entrypoints\.openai\.api_server)\b")),
)
PROMPT = re.compile(r"^\s*(?:\$\s+|>\s+|!\s*)?")


@dataclass(frozen=True)
class Command:
    kind: str            # cm | mlc | vllm
    text: str            # one line, continuations joined

    def options(self) -> dict[str, str]:
        """--key=value and --key value options (the last one wins); flags without a value are 'yes'."""
        try:
            words = shlex.split(self.text, comments=True)     # a trailing `# ...` is a remark, not options
        except ValueError:
            words = self.text.split("#", 1)[0].split()
        out, i = {}, 0
        while i < len(words):
            w = words[i]
            if w.startswith("--"):
                key, eq, value = w[2:].partition("=")
                if not eq:
                    nxt = words[i + 1] if i + 1 < len(words) else ""
                    if nxt and not nxt.startswith("--"):
                        value, i = nxt, i + 1
                    else:
                        value = "yes"
                out[key if "." in key else key.replace("-", "_")] = value   # --adr.x-y.tags stays as typed
            i += 1
        return out

    def tags(self) -> list[str]:
        """The `--tags=` of a CM or MLC command, split at commas ([] when none)."""
        return [t for t in self.options().get("tags", "").split(",") if t]

    def model(self) -> str:
        """The served model of a `vllm serve MODEL` line, else the --model option ('' when none)."""
        words = self.text.split()
        if self.kind == "vllm" and len(words) > 2 and words[:2] == ["vllm", "serve"] and not words[2].startswith("-"):
            return words[2]
        return self.options().get("model", "")


def _logical_lines(text: str) -> list[str]:
    """Lines with trailing-backslash continuations joined (CRLF or LF)."""
    out, current = [], ""
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
            continue
        out.append((current + line.strip()).strip())
        current = ""
    if current:
        out.append(current.strip())
    return out


def find_commands(text: str) -> list[Command]:
    """Every CM, MLC and vLLM command line in a document, in order."""
    found = []
    for line in _logical_lines(text):
        line = PROMPT.sub("", line).strip().strip("`")
        for kind, pattern in KINDS:
            if pattern.match(line):
                found.append(Command(kind, re.sub(r"\s+", " ", line)))
                break
    return found
