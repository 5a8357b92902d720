"""What upstream CM hooks may touch (cmapi.py) and the cm4mlops manifest keys the engine takes."""
import os

import pytest

from cmengine import cmapi, env as envmod
from cmengine.errors import ManifestError
from cmengine.manifest import load_manifest
from cmengine.registry import Query, Registry
from enginefixtures import make_repo


def _manifest(tmp_path, text):
    d = tmp_path / "s"
    d.mkdir(exist_ok=True)
    (d / "_cm.yaml").write_text(text)
    return load_manifest(str(d))


def test_os_info_has_what_upstream_hooks_read():
    info = cmapi.os_info()
    assert info["platform"] in ("linux", "darwin")
    assert info["bat_ext"] == ".sh" and info["env_separator"] == os.pathsep
    assert info["bits"] in ("32", "64") and info["python_bits"] in ("32", "64")
    assert "${bat_file}" in info["run_local_bat_from_python"]


def test_script_file_prefers_the_host_flavour(tmp_path):
    (tmp_path / "run.sh").write_text("")
    env = {"CM_HOST_OS_FLAVOR": "ubuntu", "CM_HOST_OS_VERSION": "22.04",
           "CM_HOST_PLATFORM_FLAVOR": "x86_64"}
    assert cmapi.script_file(env, str(tmp_path)) == "run.sh"
    (tmp_path / "run-ubuntu.sh").write_text("")
    assert cmapi.script_file(env, str(tmp_path)) == "run-ubuntu.sh"
    (tmp_path / "run-ubuntu-22.04.sh").write_text("")
    assert cmapi.script_file(env, str(tmp_path)) == "run-ubuntu-22.04.sh"
    assert cmapi.script_file({}, str(tmp_path)) == "run.sh"


def test_new_env_keys_take_wildcards_and_indirect_names():
    env = {"CM_A_1": "x", "CM_B": "y", "CM_WHERE": "CM_PATH_X", "CM_PATH_X": "/p", "OTHER": "z"}
    assert envmod.select(env, ["CM_A_?", "<<<CM_WHERE>>>"]) == {"CM_A_1": "x", "CM_PATH_X": "/p"}
    assert envmod.select(env, ["<<<CM_MISSING>>>"]) == {}


def test_new_state_keys_take_wildcards_and_indirect_names():
    state = {"os_uname_all": "L", "os_uname_machine": "x86", "which": "pick", "pick": {"a": 1},
             "other": 2}
    assert cmapi.select_state(state, ["os_uname_*"]) == {"os_uname_all": "L",
                                                          "os_uname_machine": "x86"}
    assert cmapi.select_state(state, ["<<<which>>>", "other"]) == {"pick": {"a": 1}, "other": 2}


def test_facade_parse_version_sets_the_env_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp-ver.out").write_text("cmake version 3.25.1\n")
    f = cmapi.Facade(str(tmp_path), {}, native=lambda *a: None)
    env = {}
    r = f.parse_version({"match_text": r"cmake version\s*([\d.]+)", "group_number": 1,
                         "env_key": "CM_CMAKE_VERSION", "which_env": env})
    assert r["return"] == 0 and r["version"] == "3.25.1"
    assert env == {"CM_CMAKE_VERSION": "3.25.1", "CM_DETECTED_VERSION": "3.25.1"}
    r = f.parse_version({"match_text": r"gcc ([\d.]+)", "group_number": 1, "env_key": "X",
                         "which_env": env})
    assert r["return"] == 1 and "not detected" in r["error"]


def test_facade_find_artifact_looks_in_cm_tmp_path_and_records_the_folder(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tool").write_text("")
    f = cmapi.Facade(str(tmp_path), {}, native=lambda *a: None)
    env = {"CM_TMP_PATH": str(bin_dir)}
    r = f.find_artifact({"file_name": "tool", "env": env, "os_info": cmapi.os_info(),
                         "default_path_env_key": "PATH", "env_path_key": "CM_TOOL_BIN"})
    assert r["return"] == 0 and env["CM_TOOL_BIN"] == str(bin_dir / "tool")
    assert env["+PATH"] == [str(bin_dir)]
    r = f.find_artifact({"file_name": "absent", "env": {"CM_TMP_PATH": str(bin_dir)},
                         "os_info": cmapi.os_info(), "default_path_env_key": "PATH"})
    assert r["return"] == 16


def test_facade_names_what_it_does_not_provide():
    f = cmapi.Facade("/x", {}, native=lambda *a: None)
    with pytest.raises(AttributeError, match="automation.docker\\(\\).*not provided"):
        f.docker({})
    assert "plans the whole graph" in f.update_deps({"deps": [], "update_deps": {}})["error"]


def test_upstream_dependency_keys_load(tmp_path):
    m = _manifest(tmp_path, """
tags: t
extra_cache_tags_from_env: [{env: CM_X, prefix: x-}]
category_sort: 5
deps:
  - tags: download,file
    extra_cache_tags: a,b
    md5sum: abc
    skip_if_fake_run: true
    adr: {inner: {tags: _v}}
variations:
  v: {base: [_size.8], required_disk_space: 10}
  size.#: {env: {CM_SIZE: '#'}}
""")
    d = m.deps["deps"][0]
    assert d.extra_cache_tags == ("a", "b") and d.inputs == (("md5sum", "abc"),)
    assert d.skip_if_fake_run and dict(d.adr) == {"inner": {"tags": "_v"}}
    assert m.variations["v"].base == ["size.8"]


@pytest.mark.parametrize("text,named", [
    ("tags: t\ndeps: [{tags: a, updats_tags_from_env_with_prefix: {x: [Y]}}]",
     "updats_tags_from_env_with_prefix"),
    ("tags: t\nvariations: {v: {alis: w}}", "alis"),
    ("tags: t\n'  force_cache': true", "  force_cache"),
])
def test_upstream_typos_are_named_errors(tmp_path, text, named):
    with pytest.raises(ManifestError, match=named):
        _manifest(tmp_path, text)


def test_alternatives_with_sort_are_taken_in_order_and_say_so(tmp_path):
    repo = make_repo(str(tmp_path), {"get-gcc": {"tags": ["get", "compiler", "gcc"], "sort": 500},
                                     "get-llvm": {"tags": ["get", "compiler", "llvm"], "sort": 100},
                                     "own-a": {"tags": ["mine", "a"]},
                                     "own-b": {"tags": ["mine", "b"]}})
    reg = Registry([repo])
    assert reg.select(Query.parse(["get", "compiler"])).alias == "get-llvm"
    assert "get-llvm (100), get-gcc (500)" in reg.note
    with pytest.raises(Exception, match="2 scripts match"):
        reg.select(Query.parse(["mine"]))


def test_conditions_follow_cms_rules_for_on_and_off():
    from cmengine import conditions

    def cond(kind, **kv):
        return ((kind, tuple((k, tuple(v)) for k, v in kv.items())),)
    # skip_if_env {CM_C_COMPILER_BIN: [on]}: any set path counts as on (get-compiler-flags)
    assert conditions.evaluate(cond("skip_if_env", X=["on"]), {"X": "/usr/bin/gcc"}) is False
    assert conditions.evaluate(cond("skip_if_env", X=["on"]), {"X": "no"}) is True
    assert conditions.evaluate(cond("skip_if_env", X=["on"]), {}) is True
    # an expected no/'' matches a missing key
    assert conditions.evaluate(cond("enable_if_env", X=["no"]), {}) is True
    assert conditions.evaluate(cond("enable_if_env", X=[""]), {}) is True
    assert conditions.evaluate(cond("enable_if_env", X=["Linux"]), {"X": "linux"}) is True
    assert conditions.evaluate(cond("enable_if_env", X=["windows"]), {"X": "linux"}) is False


def test_the_cm_json_form_loads_like_the_yaml_form(tmp_path):
    """Older CM repositories keep `_cm.json`; the same manifest in both forms gives the same
    script (and an error in the JSON form still names the file and the key)."""
    import json
    meta = {"alias": "j", "tags": ["get", "j"], "cache": True,
            "deps": [{"tags": "detect,os", "extra_cache_tags": "x"}],
            "new_state_keys": ["j_*"], "variations": {"a": {"group": "g", "default": True}}}
    d = tmp_path / "j"
    d.mkdir()
    (d / "_cm.json").write_text(json.dumps(meta))
    m = load_manifest(str(d))
    assert (m.alias, m.tags, m.cache) == ("j", ["get", "j"], True)
    assert m.deps["deps"][0].extra_cache_tags == ("x",) and m.groups == {"g": ["a"]}
    meta["deps"][0]["tgas"] = {"x": 1}
    (d / "_cm.json").write_text(json.dumps(meta))
    with pytest.raises(ManifestError, match=r"_cm.json.*tgas"):
        load_manifest(str(d))
