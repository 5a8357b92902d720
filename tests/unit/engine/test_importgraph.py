"""The import graph behind a step's key: what its code really imports or runs, read with `ast`."""
import os

from cmengine.fingerprint import library_files
from cmengine.importgraph import Graph, parse_python, parse_shell, read_records

AUTOMATION = os.path.join(os.path.dirname(__file__), "..", "..", "..", "automation")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_library(auto):
    """A small library with the shapes that matter: relative and absolute imports, a package
    whose __init__ re-exports, a name that is not a module, a runnable package."""
    lib = auto / "mlperf_llm"
    write(lib / "__init__.py", '"""The library."""\n')
    write(lib / "files.py", "def write_atomic(): pass\n")
    write(lib / "area" / "__init__.py", "")
    write(lib / "area" / "entry.py", "from . import helper\nfrom .other import (\n    thing,\n"
                                     "    more as m)\n\ndef main(): pass\n")
    write(lib / "area" / "helper.py", "from ..files import write_atomic\n")
    write(lib / "area" / "other.py", "thing = more = 1\n")
    write(lib / "area" / "unused.py", "X = 1\n")
    write(lib / "eager" / "__init__.py", "from .a import A\nfrom .b import B\n")
    write(lib / "eager" / "a.py", "A = 1\n")
    write(lib / "eager" / "b.py", "B = 2\n")
    write(lib / "tool" / "__init__.py", "")
    write(lib / "tool" / "__main__.py", "print('run')\n")
    write(auto / "engine" / "__init__.py", "")
    write(auto / "engine" / "versions.py", "import re\nfrom .errors import VersionError\n")
    write(auto / "engine" / "errors.py", "class VersionError(Exception): pass\n")
    return lib


def step_files(tmp_path, files):
    auto = tmp_path / "automation"
    make_library(auto)
    step = tmp_path / "step"
    for name, text in files.items():
        write(step / name, text)
    return sorted(os.path.relpath(f, auto) for f in library_files(str(step), str(auto)))


def test_absolute_relative_and_multiline_imports_with_the_packages_on_the_way(tmp_path):
    assert step_files(tmp_path, {"customize.py": "from mlperf_llm.area.entry import main\n"}) == [
        "mlperf_llm/__init__.py", "mlperf_llm/area/__init__.py", "mlperf_llm/area/entry.py",
        "mlperf_llm/area/helper.py", "mlperf_llm/area/other.py", "mlperf_llm/files.py"]


def test_from_package_import_module_is_the_submodule_and_a_name_is_not(tmp_path):
    assert step_files(tmp_path, {"customize.py": "from mlperf_llm.area import other, nothing\n"}) \
        == ["mlperf_llm/__init__.py", "mlperf_llm/area/__init__.py", "mlperf_llm/area/other.py"]


def test_a_package_init_that_imports_its_modules_is_what_importing_it_runs(tmp_path):
    # the rule is Python's: importing eager.a runs eager/__init__.py, which imports b
    assert step_files(tmp_path, {"customize.py": "from mlperf_llm.eager.a import A\n"}) == [
        "mlperf_llm/__init__.py", "mlperf_llm/eager/__init__.py", "mlperf_llm/eager/a.py",
        "mlperf_llm/eager/b.py"]


def test_text_that_names_a_module_is_not_an_import(tmp_path):
    hook = ('"""Uses mlperf_llm.area.unused? No: this docstring only names it."""\n'
            "import os  # mlperf_llm.tool\n"
            "def preprocess(i):\n"
            "    raise ValueError('run python -m mlperf_llm.tool or see mlperf_llm.area.unused')\n")
    assert step_files(tmp_path, {"customize.py": hook, "run.sh": "echo mlperf_llm.area.other\n"
                                 "# python -m mlperf_llm.tool\n"}) == []


def test_lazy_imports_count_and_type_checking_imports_do_not(tmp_path):
    hook = ("from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from mlperf_llm.area import unused\n"
            "else:\n    from mlperf_llm import files\n"
            "def preprocess(i):\n    from mlperf_llm.area import other\n")
    assert step_files(tmp_path, {"customize.py": hook}) == [
        "mlperf_llm/__init__.py", "mlperf_llm/area/__init__.py", "mlperf_llm/area/other.py",
        "mlperf_llm/files.py"]


def test_python_dash_m_in_run_sh_runs_the_package_main(tmp_path):
    assert step_files(tmp_path, {"run.sh": 'set -e\n"${CM_VENV_PYTHON}" -m mlperf_llm.tool "$@"\n'}) \
        == ["mlperf_llm/__init__.py", "mlperf_llm/tool/__init__.py", "mlperf_llm/tool/__main__.py"]
    assert parse_shell("python3 -m 'mlperf_llm.area.other' --x\nfoo --no-m x\n") == (
        ("run", "mlperf_llm.area.other"),)


def test_a_subprocess_argv_with_dash_m_in_library_code_counts_a_string_does_not(tmp_path):
    auto = tmp_path / "automation"
    lib = make_library(auto)
    write(lib / "area" / "other.py", "import subprocess, sys\nthing = more = 1\n"
          "def go():\n    subprocess.run([sys.executable, '-m', 'mlperf_llm.tool', '--x'])\n"
          "USAGE = 'python -m mlperf_llm.area.unused'\n")
    write(tmp_path / "step" / "customize.py", "from mlperf_llm.area import other\n")
    files = sorted(os.path.relpath(f, auto) for f in library_files(str(tmp_path / "step"), str(auto)))
    assert "mlperf_llm/tool/__main__.py" in files and "mlperf_llm/area/unused.py" not in files


def test_import_module_with_a_constant_name_counts():
    assert parse_python("import importlib\nimportlib.import_module('mlperf_llm.area.other')\n"
                        "importlib.import_module(name)\n") == (
        ("import", 0, "importlib", None), ("import", 0, "mlperf_llm.area.other", None))


def test_a_second_local_package_is_followed_and_outside_packages_are_not(tmp_path):
    assert step_files(tmp_path, {"customize.py": "import os, yaml\nfrom engine.versions import X\n"}) \
        == ["engine/__init__.py", "engine/errors.py", "engine/versions.py"]


def test_a_file_that_does_not_parse_has_no_imports_and_no_error(tmp_path):
    assert step_files(tmp_path, {"customize.py": "from mlperf_llm import files\ndef (:\n"}) == []
    assert parse_python("def (:") == ()


def test_relative_imports_resolve_against_the_package_and_never_escape_it(tmp_path):
    auto = tmp_path / "automation"
    lib = make_library(auto)
    write(lib / "area" / "deep.py", "from .. import files\nfrom ...outside import x\nfrom . import *\n")
    g = Graph([str(auto)], read_records)
    assert {os.path.relpath(f, auto) for f in g.targets(str(lib / "area" / "deep.py"))} == {
        "mlperf_llm/__init__.py", "mlperf_llm/area/__init__.py", "mlperf_llm/files.py"}


def test_the_registry_parser_modules_are_the_import_closure_of_the_manifest_parser():
    from cmengine.registry import PARSER_MODULES
    engine = os.path.join(os.path.abspath(AUTOMATION), "cmengine")
    manifest = os.path.join(engine, "manifest.py")
    closure = Graph([os.path.abspath(AUTOMATION)], read_records).closure([manifest])
    assert sorted({os.path.relpath(f, engine) for f in closure} | {"manifest.py"}) == \
        sorted(PARSER_MODULES)


def test_no_package_init_a_real_step_reaches_imports_anything():
    """The rule that keeps keys narrow: importing a package runs its __init__.py, so one that
    imported its modules would put all of them into the key of every step using one."""
    from cmengine.fingerprint import library_files
    root = os.path.abspath(os.path.join(AUTOMATION, ".."))
    auto = os.path.abspath(AUTOMATION)
    offenders = {}
    for step in sorted(os.listdir(os.path.join(root, "script"))):
        for f in library_files(os.path.join(root, "script", step), auto):
            if os.path.basename(f) == "__init__.py" and read_records(f):
                offenders.setdefault(os.path.relpath(f, auto), []).append(step)
    assert offenders == {}
