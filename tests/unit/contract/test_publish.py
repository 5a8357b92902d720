"""A file or a folder is put in place whole, or not at all, and nothing is left beside it."""
import json
import os
import stat

import pytest

from cmcontract.publish import replace_dir, staged_file, write_json, write_text


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_staged_file_appears_only_when_the_block_ends(tmp_path):
    dest = tmp_path / "sub" / "out.txt"
    with staged_file(dest) as tmp:
        with open(tmp, "w") as f:
            f.write("new")
        assert not dest.exists()
    assert dest.read_text() == "new" and mode(dest) == 0o644
    assert os.listdir(dest.parent) == ["out.txt"]


def test_a_failed_block_leaves_the_old_file_and_no_temporary(tmp_path):
    dest = tmp_path / "out.txt"
    dest.write_text("old")
    with pytest.raises(RuntimeError):
        with staged_file(dest) as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError("stopped")
    assert dest.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]


def test_json_that_cannot_be_written_touches_nothing(tmp_path):
    write_json(tmp_path / "a.json", {"x": [1]})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": [1]}
    with pytest.raises(TypeError):
        write_json(tmp_path / "a.json", {"x": {1, 2}})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": [1]} and os.listdir(tmp_path) == ["a.json"]
    write_text(tmp_path / "t.txt", "é\n")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "é\n"


def test_a_folder_replaces_another_whole(tmp_path):
    dest, new = tmp_path / "model", tmp_path / "build"
    dest.mkdir()
    (dest / "old.bin").write_text("old")
    new.mkdir()
    (new / "new.bin").write_text("new")
    replace_dir(new, dest)
    assert os.listdir(dest) == ["new.bin"] and sorted(os.listdir(tmp_path)) == ["model"]
    (tmp_path / "b2").mkdir()
    replace_dir(tmp_path / "b2", tmp_path / "fresh")      # nothing there before
    assert sorted(os.listdir(tmp_path)) == ["fresh", "model"]


def test_a_folder_that_cannot_be_put_in_place_leaves_the_old_one(tmp_path):
    dest = tmp_path / "model"
    dest.mkdir()
    (dest / "old.bin").write_text("old")
    with pytest.raises(FileNotFoundError):
        replace_dir(tmp_path / "missing", dest)
    assert os.listdir(dest) == ["old.bin"] and sorted(os.listdir(tmp_path)) == ["model"]
