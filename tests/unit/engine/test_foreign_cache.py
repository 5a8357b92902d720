"""cmengine/foreign_cache.py: another CM engine's cache entries, listed and never touched."""
import json
import os

from cmengine import foreign_cache


def _entry(repo, uid, tags, script="get-python3,d0b5dd74373f4a62", **extra):
    folder = os.path.join(repo, "cache", uid)
    os.makedirs(folder)
    meta = {"alias": "", "uid": uid, "automation_alias": "cache",
            "automation_uid": "541d6f712a6b464e", "tags": tags,
            "associated_script_artifact": script, **extra}
    with open(os.path.join(folder, "_cm.json"), "w") as f:
        json.dump(meta, f)
    return folder


def test_scan_reads_cache_artifacts_and_skips_what_is_not_one(tmp_path):
    local = str(tmp_path / "local")
    _entry(local, "8d364f3c170740a5", ["get", "python3"], version="3.11.7")
    os.makedirs(os.path.join(local, "cache", "half-written"))           # no _cm.json
    bad = os.path.join(local, "cache", "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "_cm.json"), "w") as f:
        f.write("{not json")
    found = foreign_cache.scan([local, str(tmp_path / "no-such-repo")])
    assert [(e.uid, e.script, e.version) for e in found] == [("8d364f3c170740a5", "get-python3",
                                                              "3.11.7")]


def test_matching_uses_tags_script_and_uid_like_our_entries(tmp_path):
    local = str(tmp_path / "local")
    _entry(local, "8d364f3c170740a5", ["get", "python3"])
    _entry(local, "1234567890abcdef", ["get", "cmake"], script="get-cmake,aaaaaaaaaaaaaaaa")
    entries = foreign_cache.scan([local])
    assert sorted(e.script for e in foreign_cache.matching(entries, ["get"], [])) == ["get-cmake",
                                                                                     "get-python3"]
    assert [e.script for e in foreign_cache.matching(entries, ["get"], ["cmake"])] == ["get-python3"]
    assert [e.uid for e in foreign_cache.matching(entries, [], [], "1234")] == ["1234567890abcdef"]
    assert [e.uid for e in foreign_cache.matching(entries, [], [], "get-c*")] == ["1234567890abcdef"]


def test_listing_marks_them_and_removal_names_the_owning_engine(tmp_path):
    local = str(tmp_path / "local")
    _entry(local, "8d364f3c170740a5", ["get", "python3"], version="3.11.7")
    entries = foreign_cache.scan([local])
    text = "\n".join(foreign_cache.render(entries, ["mlcommons@cm4mlops"]))
    assert "[other engine]  get-python3 3.11.7" in text and "neither reuses nor removes" in text
    note = foreign_cache.removal_note(entries, ["mlcommons@cm4mlops"], "python3")
    assert "left alone" in note and "cm rm mlcommons@cm4mlops:cache --tags=python3 -f" in note
    assert foreign_cache.render([], ["x"]) == [] and foreign_cache.removal_note([], ["x"], "") == ""


def test_owners_are_repositories_with_a_cache_automation(tmp_path):
    with_cache = tmp_path / "cm4mlops" / "automation" / "cache"
    with_cache.mkdir(parents=True)
    (with_cache / "_cm.json").write_text("{}")
    assert foreign_cache.owners({"mlcommons@cm4mlops": str(with_cache),
                                 "local": str(tmp_path / "local" / "automation" / "cache")}) \
        == ["mlcommons@cm4mlops"]
