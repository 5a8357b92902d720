"""The fingerprint memo: file digests and import records, memoised per file, keyed on its own code."""
import os

from cmengine.fingerprint import Fingerprints


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


def test_memo_parses_each_file_once_and_notices_edits_and_a_new_hook(tmp_path, monkeypatch):
    from cmengine import fingerprint
    parsed = []
    real = fingerprint.read_records
    monkeypatch.setattr(fingerprint, "read_records", lambda p: parsed.append(p) or real(p))
    auto = tmp_path / "automation"
    lib = make_library(auto)
    step = tmp_path / "step"
    write(step / "customize.py", "from mlperf_llm.area import other\n")
    fp = Fingerprints(str(tmp_path / "memo.pickle"))
    assert "area/unused.py" not in rel(lib, fp.library_files(str(step), str(auto)))
    fp.save()
    again = Fingerprints(str(tmp_path / "memo.pickle"))       # a later command: memo from disk
    parsed.clear()
    again.library_files(str(step), str(auto))
    assert parsed == []                                        # nothing changed, nothing parsed
    write(lib / "area" / "other.py", "from . import unused\nthing = more = 1\n")
    assert "area/unused.py" in rel(lib, again.library_files(str(step), str(auto)))
    assert [os.path.basename(p) for p in parsed] == ["other.py", "unused.py"]
    write(step / "run.sh", "python -m mlperf_llm.tool\n")
    assert "tool/__main__.py" in rel(lib, again.library_files(str(step), str(auto)))


def test_memo_is_keyed_on_the_code_that_fills_it(tmp_path, monkeypatch):
    from cmengine import fingerprint
    memo = str(tmp_path / "memo.pickle")
    fp = Fingerprints(memo)
    (tmp_path / "f").write_text("x")
    fp.file(str(tmp_path / "f"))
    fp.save()
    assert str(tmp_path / "f") in Fingerprints(memo)._memo
    other = tmp_path / "importgraph.py"                        # as if importgraph.py were edited
    other.write_text("# another version\n")
    monkeypatch.setattr(fingerprint, "_MEMO_CODE", (fingerprint._MEMO_CODE[0], str(other)))
    assert str(tmp_path / "f") not in Fingerprints(memo)._memo


def test_code_key_changes_with_the_code_and_the_extra_facts(tmp_path):
    from cmengine.fingerprint import code_key
    a = tmp_path / "a.py"
    a.write_text("A = 1\n")
    k = code_key([str(a)], "yaml 6.0")
    assert k == code_key([str(a)], "yaml 6.0")
    assert k != code_key([str(a)], "yaml 6.0.1")
    a.write_text("A = 2\n")
    assert k != code_key([str(a)], "yaml 6.0")


def test_changed_files_names_what_differs_from_the_repository():
    from cmengine.fingerprint import changed_files
    old = {"customize.py": "1", "../../automation/mlperf_llm/a.py": "2", "gone.sh": "3"}
    new = {"customize.py": "1", "../../automation/mlperf_llm/a.py": "9", "run.sh": "4"}
    assert changed_files(old, new) == ["changed automation/mlperf_llm/a.py", "new run.sh",
                                       "removed gone.sh"]
    assert changed_files(old, dict(old)) == []
