"""Where the cache lives: one answer for the engine's store and the library's memos."""
from cmcontract.places import cache_root


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == str(tmp_path / "c")
    monkeypatch.setenv("CM4MLPERF_CACHE_DIR", " ")
    monkeypatch.setenv("CM_REPOS", str(tmp_path / "repos"))
    assert cache_root() == str(tmp_path / "repos" / "cm4mlperf-llm-cache")
    monkeypatch.delenv("CM_REPOS")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == str(tmp_path / "home" / "CM" / "cm4mlperf-llm-cache")
