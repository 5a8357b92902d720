import os

import pytest

from cmengine.errors import ManifestError
from cmengine.manifest import load_manifest
from cmengine.registry import Query, Registry
from enginefixtures import make_repo


def _write(tmp_path, text):
    d = tmp_path / "s"
    d.mkdir()
    (d / "_cm.yaml").write_text(text)
    return str(d)


def test_valid_manifest_is_typed(tmp_path):
    m = load_manifest(_write(tmp_path, """
alias: s
tags: get,thing
cache: true
deps:
  - tags: detect,os
    names: [os]
    enable_if_env: {CM_X: [yes]}
variations:
  a: {group: g, default: true, env: {CM_A: 1}}
  size.#: {env: {CM_SIZE: '#'}}
"""))
    assert m.tags == ["get", "thing"] and m.cache
    assert m.deps["deps"][0].tags == ("detect", "os") and m.deps["deps"][0].names == ("os",)
    assert m.variations["a"].data["env"] == {"CM_A": "1"}
    assert m.groups == {"g": ["a"]}


def test_unknown_key_names_file_line_key_and_closest(tmp_path):
    folder = _write(tmp_path, "alias: s\ntags: [x]\n\ndpes:\n  - tags: a\n")
    with pytest.raises(ManifestError) as e:
        load_manifest(folder)
    msg = str(e.value)
    assert os.path.join(folder, "_cm.yaml") + ":4" in msg
    assert "'dpes'" in msg and "Did you mean: deps" in msg


def test_unknown_dep_key_has_line(tmp_path):
    folder = _write(tmp_path, "alias: s\ntags: [x]\ndeps:\n  - tags: a\n    enable_if_evn: {A: [1]}\n")
    with pytest.raises(ManifestError) as e:
        load_manifest(folder)
    assert "_cm.yaml:5" in str(e.value) and "enable_if_env" in str(e.value)


def test_bad_yaml_reports_line(tmp_path):
    folder = _write(tmp_path, "alias: s\ntags: [x\ncache: true\n")
    with pytest.raises(ManifestError) as e:
        load_manifest(folder)
    assert "not valid YAML" in str(e.value) and "_cm.yaml:" in str(e.value)


def test_undefined_base_variation(tmp_path):
    folder = _write(tmp_path, "alias: s\ntags: [x]\nvariations:\n  a: {base: [bb]}\n  b: {}\n")
    with pytest.raises(ManifestError) as e:
        load_manifest(folder)
    assert "base variation 'bb'" in str(e.value) and "_cm.yaml:4" in str(e.value)


def test_broken_manifest_affects_only_its_script(tmp_path):
    repo = make_repo(str(tmp_path), {"good": {"tags": ["good"]}})
    bad = os.path.join(repo.path, "script", "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "_cm.yaml"), "w") as f:
        f.write("alias: bad\ntags: [good, x\n")
    reg = Registry([repo])
    assert [m.alias for m in reg.find(Query.parse(["good"]))] == ["good"]
    assert len(reg.warnings()) == 1 and os.path.join(bad, "_cm.yaml") in reg.warnings()[0]
