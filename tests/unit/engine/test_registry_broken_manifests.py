"""The registry's per-script memo: broken manifests reload from it and are reported once."""
import os
import pickle

from cmengine import registry
from cmengine.errors import ManifestError
from cmengine.registry import Registry
from enginefixtures import make_repo


def _broken(repo, n):
    for k in range(n):
        bad = os.path.join(repo.path, "script", f"bad-{k}")
        os.makedirs(bad)
        with open(os.path.join(bad, "_cm.yaml"), "w") as f:
            f.write(f"alias: bad-{k}\ntags: [x\n")


def test_manifest_errors_survive_pickling_with_their_message():
    e = ManifestError("/r/script/s/_cm.yaml", "unknown key 'x'", line=3, key="x", hint="Valid: y")
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) and (back.path, back.line, back.key) == (e.path, 3, "x")


def test_a_repository_with_broken_manifests_reloads_from_the_memo(tmp_path, monkeypatch):
    repo = make_repo(str(tmp_path), {"good": {"tags": ["good"]}})
    _broken(repo, 2)
    memo = str(tmp_path / "memo" / "registry.pickle")
    first = Registry([repo], memo)
    assert len(first.broken) == 2 and len(first.warnings()) == 2
    # the second load parses nothing: every script, broken ones included, comes from the memo
    monkeypatch.setattr(registry, "load_manifest",
                        lambda folder: (_ for _ in ()).throw(AssertionError(f"parsed {folder}")))
    second = Registry([repo], memo)
    assert [m.alias for m in second.scripts] == ["good"] and len(second.broken) == 2
    assert second.warnings() == []                       # said once, on the first load
    assert len(second.check()) == 2 and "bad-0/_cm.yaml:3: not valid YAML" in second.check()[0]


def test_many_new_broken_manifests_are_one_line(tmp_path):
    repo = make_repo(str(tmp_path), {"good": {"tags": ["good"]}}, alias="big-repo")
    _broken(repo, registry.LISTED_BROKEN + 1)
    w = Registry([repo]).warnings()
    assert len(w) == 1 and f"{registry.LISTED_BROKEN + 1} script manifests in big-repo" in w[0]
    assert "cm check script" in w[0]


def test_an_edited_manifest_that_breaks_is_named_again(tmp_path):
    repo = make_repo(str(tmp_path), {"good": {"tags": ["good"]}, "later": {"tags": ["later"]}})
    memo = str(tmp_path / "memo.pickle")
    assert Registry([repo], memo).warnings() == []
    path = os.path.join(repo.path, "script", "later", "_cm.yaml")
    with open(path, "w") as f:
        f.write("alias: later\ntags: [later\n")
    w = Registry([repo], memo).warnings()
    assert len(w) == 1 and path in w[0]


def test_a_session_over_fewer_repositories_keeps_the_memo_of_the_others(tmp_path):
    one = make_repo(str(tmp_path / "a"), {"s1": {"tags": ["s1"]}}, alias="one")
    two = make_repo(str(tmp_path / "b"), {"s2": {"tags": ["s2"]}}, alias="two")
    _broken(two, registry.LISTED_BROKEN + 1)
    memo = str(tmp_path / "memo.pickle")
    assert len(Registry([one, two], memo).warnings()) == 1
    Registry([one], memo)                  # e.g. `cm show cache`, which scans only this project
    assert Registry([one, two], memo).warnings() == []
