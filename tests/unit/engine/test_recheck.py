"""What an entry found outside the cache (cache_recheck_env) is re-checked when it is reused."""
import os

from cmengine import cache


def entry_for(env, keys):
    return cache.Entry("ab" * 32, "/nowhere", {"recheck": cache.found_files(env, keys)})


def test_an_unchanged_file_passes_and_only_declared_absolute_paths_are_recorded(tmp_path):
    py = tmp_path / "python3.11"
    py.write_text("#!/bin/sh\n")
    env = {"CM_PYTHON_BIN_WITH_PATH": str(py), "CM_PYTHON_BIN": "python3.11",
           "CM_OTHER_PATH": str(py), "CM_PYTHON_MISSING": str(tmp_path / "none")}
    e = entry_for(env, ["CM_PYTHON_*"])
    assert list(e.meta["recheck"]) == [str(py)]
    assert cache.recheck(e) == ""


def test_a_changed_file_says_what_changed(tmp_path):
    py = tmp_path / "python3.11"
    py.write_text("#!/bin/sh\n")
    e = entry_for({"CM_PYTHON_BIN_WITH_PATH": str(py)}, ["CM_PYTHON_BIN_WITH_PATH"])
    py.write_text("#!/bin/sh\necho upgraded\n")
    reason = cache.recheck(e)
    assert reason.startswith(f"{py} changed since entry abababababab was cached (size 10 -> 24 bytes")


def test_a_file_with_the_same_size_but_a_new_mtime_is_changed(tmp_path):
    py = tmp_path / "python3.11"
    py.write_text("v1")
    e = entry_for({"P": str(py)}, ["P"])
    st = py.stat()
    py.write_text("v2")
    os.utime(py, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache.recheck(e).startswith(f"{py} changed since entry abababababab was cached (modified ")


def test_a_gone_file_and_a_moved_symlink_are_named(tmp_path):
    a, b = tmp_path / "python3.11", tmp_path / "python3.12"
    a.write_text("x")
    b.write_text("x")
    link = tmp_path / "python3"
    link.symlink_to(a)
    e = entry_for({"P": str(link)}, ["P"])
    link.unlink()
    link.symlink_to(b)
    assert cache.recheck(e) == (f"{link} now resolves to {b} (was {a}) since entry abababababab "
                                "was cached")
    link.unlink()
    assert cache.recheck(e) == f"{link} is gone since entry abababababab was cached; the step looks again"


def test_an_entry_without_a_record_is_reused_as_before():
    assert cache.recheck(cache.Entry("ab" * 32, "/nowhere", {})) == ""
