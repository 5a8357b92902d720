import pytest

from cmengine.errors import VariationError
from cmengine.manifest import _build
from cmengine.variations import select


def manifest(variations, **top):
    return _build("/x/_cm.yaml", "/x", {"alias": "s", "tags": ["s"], "variations": variations, **top})


V = {
    "fp16": {"group": "precision", "default": True, "env": {"P": "fp16"}},
    "fp8": {"group": "precision", "env": {"P": "fp8"}},
    "cpu": {"group": "device", "env": {"D": "cpu"}},
    "cuda": {"group": "device", "env": {"D": "cuda"}, "default_variations": {"precision": "fp8"}},
    "full": {"base": ["cpu"], "env": {"F": "1"}},
    "size.#": {"env": {"N": "#"}},
    "cpu,fp8": {"env": {"COMBO": "yes"}},
}


def envs(sel):
    out = {}
    for a in sel.applied:
        out.update(a.get("env", {}))
    return out


def test_group_default_applies():
    sel = select(manifest(V), [])
    assert sel.names == ["fp16"] and envs(sel) == {"P": "fp16"}


def test_explicit_choice_replaces_default():
    assert envs(select(manifest(V), ["fp8"]))["P"] == "fp8"


def test_variation_default_variations_override_manifest_default():
    sel = select(manifest(V), ["cuda"])
    assert sorted(sel.names) == ["cuda", "fp8"]


def test_base_is_added_and_applied_first():
    sel = select(manifest(V), ["full"])
    assert "cpu" in sel.names and envs(sel)["D"] == "cpu"


def test_dynamic_variation():
    sel = select(manifest(V), ["size.128"])
    assert envs(sel)["N"] == "128" and "size.128" in sel.names


def test_combined_variation():
    assert envs(select(manifest(V), ["cpu", "fp8"]))["COMBO"] == "yes"
    assert "COMBO" not in envs(select(manifest(V), ["cpu"]))


def test_two_in_one_group_is_an_error():
    with pytest.raises(VariationError) as e:
        select(manifest(V), ["cpu", "cuda"])
    assert "group 'device'" in str(e.value)


def test_excluded_default_is_not_applied():
    sel = select(manifest(V), [], ["fp16"])
    assert sel.names == []


def test_unknown_variation_suggests():
    with pytest.raises(VariationError) as e:
        select(manifest(V), ["fp9"])
    assert "Did you mean" in str(e.value) and "_fp8" in str(e.value)


def test_manifest_default_variations():
    m = manifest({"a": {"group": "g"}, "b": {"group": "g"}}, default_variations={"g": "b"})
    assert select(m, []).names == ["b"]
