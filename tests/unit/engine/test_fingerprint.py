"""Which library modules a step's key covers: those its hooks reach by import or `python -m`."""
import os

from cmengine.fingerprint import Fingerprints, library_files


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_library(auto):
    lib = auto / "mlperf_llm"
    write(lib / "__init__.py", "")
    write(lib / "files.py", "def write_atomic(): pass\n")
    write(lib / "area" / "__init__.py", "")
    write(lib / "area" / "entry.py", "from . import helper\nfrom .other import (\n    thing,\n    more as m)\n")
    write(lib / "area" / "helper.py", "from ..files import write_atomic\n")
    write(lib / "area" / "other.py", "thing = more = 1\n")
    write(lib / "area" / "unused.py", "X = 1\n")
    write(lib / "tool" / "__init__.py", "")
    write(lib / "tool" / "__main__.py", "print('run')\n")
    return lib


def rel(lib, files):
    return sorted(os.path.relpath(f, lib) for f in files)


def test_closure_follows_absolute_relative_and_multiline_imports(tmp_path):
    lib = make_library(tmp_path / "automation")
    step = tmp_path / "step"
    write(step / "customize.py", "from mlperf_llm.area.entry import main\n")
    files, read = library_files(str(step), str(tmp_path / "automation"))
    assert rel(lib, files) == ["__init__.py", "area/__init__.py", "area/entry.py", "area/helper.py",
                               "area/other.py", "files.py"]
    assert str(step / "customize.py") in read


def test_run_sh_python_dash_m_and_attribute_references_count(tmp_path):
    lib = make_library(tmp_path / "automation")
    step = tmp_path / "step"
    write(step / "run.sh", '"$PY" -m mlperf_llm.tool "$@"\necho mlperf_llm.area.other.thing\n')
    files, _ = library_files(str(step), str(tmp_path / "automation"))
    assert rel(lib, files) == ["__init__.py", "area/__init__.py", "area/other.py", "tool/__init__.py",
                               "tool/__main__.py"]


def test_step_without_library_use_has_no_library_files(tmp_path):
    make_library(tmp_path / "automation")
    step = tmp_path / "step"
    write(step / "customize.py", "import os\n")
    assert library_files(str(step), str(tmp_path / "automation"))[0] == []


def test_memo_notices_a_new_import_in_a_reached_module_and_a_new_hook(tmp_path):
    auto = tmp_path / "automation"
    lib = make_library(auto)
    step = tmp_path / "step"
    write(step / "customize.py", "from mlperf_llm.area import other\n")
    fp = Fingerprints(str(tmp_path / "memo.pickle"))
    assert "area/unused.py" not in rel(lib, fp.library_files(str(step), str(auto)))
    write(lib / "area" / "other.py", "from . import unused\nthing = more = 1\n")
    assert "area/unused.py" in rel(lib, fp.library_files(str(step), str(auto)))
    write(step / "run.sh", "python -m mlperf_llm.tool\n")
    fp.save()
    again = Fingerprints(str(tmp_path / "memo.pickle"))      # memo from disk, run.sh is new
    assert "tool/__main__.py" in rel(lib, again.library_files(str(step), str(auto)))


def test_changed_files_names_what_differs_from_the_repository():
    from cmengine.fingerprint import changed_files
    old = {"customize.py": "1", "../../automation/mlperf_llm/a.py": "2", "gone.sh": "3"}
    new = {"customize.py": "1", "../../automation/mlperf_llm/a.py": "9", "run.sh": "4"}
    assert changed_files(old, new) == ["changed automation/mlperf_llm/a.py", "new run.sh",
                                       "removed gone.sh"]
    assert changed_files(old, dict(old)) == []
