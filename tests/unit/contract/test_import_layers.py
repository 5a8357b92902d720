"""Who may import whom (docs/engine.md, "The contract"), read from the syntax trees:

- the library (automation/mlperf_llm) and the steps (script/*) never import the engine (cmengine):
  a step is keyed on the code it imports, so an engine edit would re-key steps it cannot change;
- the contract (automation/cmcontract) imports the standard library only;
- in the library, submission/ does not import reproduce/ (a submission carries the record; the
  replay is built on the submission, not the reverse).
"""
import ast
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
AUTOMATION = os.path.join(ROOT, "automation")


def python_files(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def imported(path):
    """(line, absolute module name) of every import in the file; relative imports are resolved
    against the file's package under automation/ (a step's customize.py has no package)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    rel = os.path.relpath(os.path.dirname(path), AUTOMATION)
    package = [] if rel.startswith("..") else rel.split(os.sep)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield node.lineno, module
            for a in node.names:   # `from . import x` may import the module x
                yield node.lineno, f"{module}.{a.name}"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            yield node.lineno, str(node.args[0].value)


def offenders(files, forbidden):
    return [f"{os.path.relpath(p, ROOT)}:{line}: imports {mod}" for p in files for line, mod in imported(p)
            if forbidden(mod)]


def _under(mod, package):
    return mod == package or mod.startswith(package + ".")


LIBRARY_AND_STEPS = sorted(list(python_files(os.path.join(AUTOMATION, "mlperf_llm")))
                           + list(python_files(os.path.join(ROOT, "script"))))


def test_the_files_are_found():
    assert len(LIBRARY_AND_STEPS) > 100
    assert os.path.join(ROOT, "script", "get-python3", "customize.py") in LIBRARY_AND_STEPS


def test_the_library_and_the_steps_never_import_the_engine():
    assert offenders(LIBRARY_AND_STEPS, lambda m: _under(m, "cmengine")) == []


def test_the_contract_imports_the_standard_library_only():
    files = list(python_files(os.path.join(AUTOMATION, "cmcontract")))
    assert len(files) >= 6
    assert offenders(files, lambda m: not _under(m, "cmcontract") and m.split(".")[0] not in
                     sys.stdlib_module_names and m != "__future__.annotations") == []


def test_submission_does_not_import_reproduce():
    files = list(python_files(os.path.join(AUTOMATION, "mlperf_llm", "submission")))
    assert len(files) > 10
    assert offenders(files, lambda m: _under(m, "mlperf_llm.reproduce")) == []


@pytest.mark.parametrize("source, line, found", [
    ("from cmengine.versions import compare\n", 1, "cmengine.versions"),
    ("import os\n\ndef f():\n    import cmengine.cache\n", 4, "cmengine.cache"),
    ("import importlib\nimportlib.import_module('cmengine.interrupt')\n", 2, "cmengine.interrupt"),
    ("from mlperf_llm import files\n", None, None),
])
def test_an_import_of_the_engine_is_found_wherever_it_is(tmp_path, source, line, found):
    p = tmp_path / "customize.py"
    p.write_text(source)
    hits = [(n, m) for n, m in imported(str(p)) if _under(m, "cmengine")]
    assert hits[:1] == ([(line, found)] if found else [])


def test_a_relative_import_resolves_against_the_package():
    mods = {m for _, m in imported(os.path.join(AUTOMATION, "mlperf_llm", "reproduce", "replay.py"))}
    assert {"mlperf_llm.reproduce.record", "mlperf_llm.reproduce.compare"} <= mods
