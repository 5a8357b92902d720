"""The local modules a step's code imports or runs, read from its syntax tree (`ast`), not its text.

The rule (docs/engine.md, "The key"):

- A Python file depends on the local modules named by its import statements, wherever they are
  (at module level or inside a function: a hook's lazy import runs when the hook does), except
  under `if TYPE_CHECKING:`. `importlib.import_module("a.b")` and `__import__("a.b")` with a
  constant name are imports too.
- `import a.b.c`, `from a.b.c import x` and `from a.b import c` run `a/__init__.py`,
  `a/b/__init__.py` and `a/b/c` (what Python executes); in `from a.b import c`, `c` counts as a
  module only when `a/b/c.py` or `a/b/c/` exists, else it is a name defined by `a/b/__init__.py`,
  which is counted already. Relative imports are resolved against the file's package.
  `from a import *` counts `a` only.
- A module run as a program counts like an import, plus a package's `__main__.py`: `-m NAME` in a
  shell script, and in Python a list or tuple literal holding the string "-m" followed by a string
  constant (the argv of a subprocess: `[python, "-m", "mlperf_llm.harness.run", ...]`).
- The relation is transitive, and importing a package runs its `__init__.py`, so a package's
  `__init__.py` that imports its submodules makes every importer of any of them depend on all of
  them: keep such files free of imports (ours are docstrings).
- Text is not an import: a docstring, an error message or a comment naming a module adds nothing.
- "Local" means found under the given roots (`automation/`: `mlperf_llm`, `cmengine`); the
  standard library and installed packages are not followed (an interpreter a step found is
  re-checked another way: `cache_recheck_env`).
"""
from __future__ import annotations

import os
import re
from typing import Callable, Iterable, Optional

# `-m name` in a shell script (a word of its own, not in a comment line); compiled on first use:
# a cached run parses nothing, and compiling it costs about a millisecond
_SHELL_DASH_M = r"(?<![\w-])-m\s+[\"']?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"

Record = tuple   # ("import", level, module, names or None) | ("run", module)


def parse_python(text: str, filename: str = "<file>") -> tuple[Record, ...]:
    """The imports and module runs of one Python file, in source order. A file that does not
    parse has none (its content is part of the key anyway, and running it fails)."""
    import ast   # only when a file changed since the memo (its import costs every command)
    try:
        tree = ast.parse(text, filename)
    except (SyntaxError, ValueError):
        return ()
    out: list[Record] = []
    todo: list = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            out.extend(("import", 0, a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append(("import", node.level or 0, node.module or "",
                        tuple(a.name for a in node.names)))
        elif isinstance(node, (ast.List, ast.Tuple)):
            elts = node.elts
            for a, b in zip(elts, elts[1:]):
                if _const_str(a) == "-m" and _const_str(b):
                    out.append(("run", _const_str(b)))
        elif isinstance(node, ast.Call) and node.args and _const_str(node.args[0]) \
                and _callee(node.func) in ("import_module", "__import__") \
                and not _const_str(node.args[0]).startswith("."):
            out.append(("import", 0, _const_str(node.args[0]), None))
        todo.extend(reversed(list(ast.iter_child_nodes(node))))
    return tuple(out)


def parse_shell(text: str) -> tuple[Record, ...]:
    """`-m NAME` runs in a shell script (comment lines skipped)."""
    out = []
    dash_m = re.compile(_SHELL_DASH_M)
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        out.extend(("run", m.group(1)) for m in dash_m.finditer(line))
    return tuple(out)


def _const_str(node) -> str:
    value = getattr(node, "value", None)
    return value if type(node).__name__ == "Constant" and isinstance(value, str) else ""


def _callee(func) -> str:
    return getattr(func, "attr", None) or getattr(func, "id", None) or ""


def _is_type_checking(test) -> bool:
    return _callee(test) == "TYPE_CHECKING"


class Graph:
    """Resolves records against local roots and walks the closure. `records(path)` gives a
    file's records (the caller memoises them per file); where modules are is looked up once
    per Graph."""

    def __init__(self, roots: Iterable[str], records: Callable[[str], tuple[Record, ...]]):
        self.roots = [os.path.abspath(r) for r in roots]
        self.records = records
        self._where: dict[str, Optional[str]] = {}

    def locate(self, dotted: str) -> Optional[str]:
        """The file of a local module (`a/b/__init__.py` or `a/b.py`), a namespace package's
        folder (ending in os.sep), or None when it is not under the roots."""
        if dotted in self._where:
            return self._where[dotted]
        found = None
        parts = dotted.split(".")
        if all(p.isidentifier() for p in parts):
            for root in self.roots:
                base = os.path.join(root, *parts)
                if os.path.isfile(os.path.join(base, "__init__.py")):
                    found = os.path.join(base, "__init__.py")
                elif os.path.isfile(base + ".py"):
                    found = base + ".py"
                elif os.path.isdir(base):
                    found = base + os.sep
                if found:
                    break
        self._where[dotted] = found
        return found

    def package_of(self, path: str) -> Optional[str]:
        """The dotted package a local file belongs to ('' at a root), None outside the roots."""
        for root in self.roots:
            rel = os.path.relpath(path, root)
            if not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
                parts = rel.split(os.sep)[:-1]
                return ".".join(parts)
        return None

    def _module_files(self, dotted: str, run: bool) -> list[str]:
        """What importing (or running) `dotted` executes: each package's `__init__.py` on the
        way, then the module; [] when its top package is not local."""
        out = []
        parts = dotted.split(".")
        for i in range(1, len(parts) + 1):
            where = self.locate(".".join(parts[:i]))
            if where is None:
                break
            out.append(where)
            if i == len(parts) and run:     # `python -m package` runs its __main__.py
                if where.endswith(os.sep):
                    pkg_dir = where.rstrip(os.sep)
                elif os.path.basename(where) == "__init__.py":
                    pkg_dir = os.path.dirname(where)
                else:
                    pkg_dir = ""
                if pkg_dir and os.path.isfile(os.path.join(pkg_dir, "__main__.py")):
                    out.append(os.path.join(pkg_dir, "__main__.py"))
        return [p for p in out if not p.endswith(os.sep)]

    def targets(self, path: str) -> list[str]:
        """The local files one file's imports and runs execute directly."""
        package = self.package_of(path)
        out = []
        for rec in self.records(path):
            if rec[0] == "run":
                out += self._module_files(rec[1], run=True)
                continue
            _, level, module, names = rec
            if level:
                if package is None:      # a relative import outside a package fails
                    continue
                pparts = package.split(".") if package else []
                if level - 1 >= len(pparts):     # beyond the top-level package: an error
                    continue
                base = pparts[:len(pparts) - (level - 1)]
                mod = ".".join(base + ([module] if module else []))
            else:
                mod = module
            if mod:
                out += self._module_files(mod, run=False)
            for name in names or ():
                if name == "*":
                    continue
                sub = f"{mod}.{name}" if mod else name
                if self.locate(sub) is not None:
                    out += self._module_files(sub, run=False)
        return out

    def closure(self, starts: Iterable[str]) -> list[str]:
        """Every local file the start files reach (the start files themselves not included
        unless something imports them), sorted."""
        seen: set[str] = set()
        todo = list(starts)
        starts_set = set(todo)
        while todo:
            for target in self.targets(todo.pop()):
                if target not in seen:
                    seen.add(target)
                    if target not in starts_set:
                        todo.append(target)
        return sorted(seen)


def read_records(path: str) -> tuple[Record, ...]:
    """A file's records, by its kind: Python (`.py`) or shell (anything else)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return parse_python(text, path) if path.endswith(".py") else parse_shell(text)
