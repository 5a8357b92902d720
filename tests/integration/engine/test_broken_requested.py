"""`cm run script` asked for a script whose manifest was skipped names why, where and the fix, as
`cm check script` words it (not only "No script has the tag ...")."""
import os

import pytest

from enginefixtures import Runner, make_repo

DEPZ = "alias: typo\nuid: 0123456789abcdef\nautomation_alias: script\nautomation_uid: 5b4e0237da074764\n" \
       "tags: [typo, demo]\ndepz:\n  - tags: detect,os\n"
BAD_YAML = "alias: typo\nuid: 0123456789abcdef\nautomation_alias: script\nautomation_uid: 5b4e0237da074764\n" \
           "tags: [typo, demo]\nenv: {CM_X: [unclosed\n"     # YAML notices it on line 7


@pytest.fixture
def runner(tmp_path):
    def make(text):
        repo = make_repo(str(tmp_path), {"good": {"tags": ["good"]}})
        folder = os.path.join(repo.path, "script", "typo")
        os.makedirs(folder)
        with open(os.path.join(folder, "_cm.yaml"), "w") as f:
            f.write(text)
        return Runner([repo], str(tmp_path / "cache")), os.path.join(folder, "_cm.yaml")
    return make


@pytest.mark.parametrize("text, reason", [
    (DEPZ, ":6: unknown manifest key 'depz'. Did you mean: deps?"),
    (BAD_YAML, ":7: not valid YAML: did not find expected ',' or ']'"),
])
@pytest.mark.parametrize("asked", [{"tags": "typo"}, {"tags": "demo,typo"}, {"artifact": "typo"}])
def test_the_skipped_manifest_asked_for_is_named_with_its_reason(runner, text, reason, asked):
    r, path = runner(text)
    out = r.run(**asked)
    assert out["return"] == 16, out
    check = r.session().check({})["skipped"]
    assert len(check) == 1 and path + reason in check[0]
    assert check[0] in out["error"]                   # the same words as cm check script
    assert "Fix it there" in out["error"] and "No script has the tag" not in out["error"]
    if text is DEPZ:
        assert "Valid manifest keys:" in out["error"]


def test_a_tag_no_skipped_manifest_has_keeps_the_plain_answer(runner):
    r, _ = runner(DEPZ)
    out = r.run(tags="typoo")
    check = r.session().check({})["skipped"][0]
    assert out["return"] == 16 and "No script has the tag 'typoo'" in out["error"]
    assert "Fix it there" not in out["error"] and "Note: a manifest was skipped: " + check in out["error"]
