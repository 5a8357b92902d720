"""The manifest index (registry memo) is keyed on the parser's own code, not on a number to bump."""
from cmengine import registry
from cmengine.registry import Registry
from enginefixtures import make_repo


def loads(monkeypatch):
    calls = []
    real = registry.load_manifest
    monkeypatch.setattr(registry, "load_manifest", lambda folder: calls.append(folder) or real(folder))
    return calls


def test_a_memo_written_by_the_same_parser_is_used(tmp_path, monkeypatch):
    repo = make_repo(str(tmp_path / "repos"), {"a": {"tags": ["a"]}, "b": {"tags": ["b"]}})
    memo = str(tmp_path / "memo" / "registry.pickle")
    Registry([repo], memo)
    calls = loads(monkeypatch)
    assert sorted(m.alias for m in Registry([repo], memo).scripts) == ["a", "b"]
    assert calls == []


def test_a_memo_written_by_other_parser_code_is_not_used(tmp_path, monkeypatch):
    repo = make_repo(str(tmp_path / "repos"), {"a": {"tags": ["a"]}, "b": {"tags": ["b"]}})
    memo = str(tmp_path / "memo" / "registry.pickle")
    Registry([repo], memo)
    # as if manifest.py had been edited since: the key is the hash of the parser's files
    parser = tmp_path / "manifest.py"
    parser.write_text("# another parser\n")
    monkeypatch.setattr(registry, "_memo_key_cache", [])
    monkeypatch.setattr(registry, "PARSER_MODULES", ("__init__.py", "errors.py", str(parser)))
    calls = loads(monkeypatch)
    assert sorted(m.alias for m in Registry([repo], memo).scripts) == ["a", "b"]
    assert len(calls) == 2
