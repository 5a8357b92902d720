"""A command line as another machine can run it: this machine's folders and secrets taken out.

The reproduction record (reproduce/capture.py) and the submission's README and system description
(submission/cmenv.py) both show commands this way.
"""
from __future__ import annotations

import os
import re
import shlex

from cmcontract.secret import is_secret


def _path_like(value) -> bool:
    return isinstance(value, str) and (value.startswith(("/", "~")) or re.match(r"^[A-Za-z]:\\", value) is not None)


def portable_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(argv another machine can run, the options left out because their value is a path on this
    machine). `cm` keeps its name; `--x=/abs/path` and `--x /abs/path` are dropped (the defaults
    or the other machine's own folders apply)."""
    out, dropped = [], []
    args = list(argv)
    if args:
        args[0] = os.path.basename(args[0])
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            name, _, value = a.partition("=")
            if _path_like(value) or is_secret(name):
                dropped.append(name)
                i += 1
                continue
        elif a.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("-") \
                and (_path_like(args[i + 1]) or is_secret(a)):
            dropped.append(a)
            i += 2
            continue
        out.append(a)
        i += 1
    return out, dropped


def portable_text(command: str) -> str:
    """A shell command with this machine's folders taken out: an interpreter path becomes its
    name (`python`), any other absolute path `<...>/<last part>` (a file inside the submitter's cache)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    out = []
    for a in argv:
        prefix, value = "", a
        if a.startswith("--") and "=" in a:
            prefix, _, value = a.partition("=")
            prefix += "="
        elif re.match(r"^[A-Z_][A-Z0-9_]*=", a):
            prefix, _, value = a.partition("=")
            prefix += "="
        if _path_like(value):
            base = os.path.basename(value.rstrip("/")) or value
            value = base if base.startswith("python") else f"<...>/{base}"
        out.append(prefix + value)
    return " ".join(a if "<...>/" in a else shlex.quote(a) for a in out)
