"""Concurrency and interruption: two runs of one node make one entry; a killed run leaves
nothing a later run accepts."""
import os
import signal
import subprocess
import sys
import time

from enginefixtures import make_repo

TESTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AUTOMATION = os.path.join(os.path.dirname(TESTS), "automation")

DRIVER = """
import sys
sys.path[:0] = [{automation!r}, {tests!r}]
from enginefixtures import Runner
from cmengine.registry import Repo
r = Runner([Repo('fixture', {repo!r})], {cache!r})
out = r.run({tags!r})
print('RESULT', out.get('return'), out.get('cached'), out.get('error', ''))
"""


def driver(repo, cache, tags):
    code = DRIVER.format(automation=AUTOMATION, tests=TESTS, repo=repo.path, cache=cache, tags=tags)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def slow_repo(tmp_path):
    sh = 'echo started > "$CM_MARK_DIR/started"\nsleep 1.5\necho run >> "$CM_MARK_DIR/count"\n' \
         'echo payload > data.txt\n'
    return make_repo(str(tmp_path / "repos"), {"slow": ({"tags": ["slow"], "cache": True},
                                                        {"run.sh": sh})})


def entries(cache):
    d = os.path.join(cache, "entries")
    return [n for n in os.listdir(d) if not n.startswith(".")] if os.path.isdir(d) else []


def test_two_concurrent_runs_make_one_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("CM_MARK_DIR", str(tmp_path))
    repo, cache = slow_repo(tmp_path), str(tmp_path / "cache")
    procs = [driver(repo, cache, "slow") for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all("RESULT 0" in o for o in outs), outs
    assert (tmp_path / "count").read_text().count("run") == 1
    assert len(entries(cache)) == 1
    assert sum("RESULT 0 True" in o for o in outs) == 1   # the second reused the first's entry


def test_killed_run_leaves_nothing_accepted(tmp_path, monkeypatch):
    monkeypatch.setenv("CM_MARK_DIR", str(tmp_path))
    repo, cache = slow_repo(tmp_path), str(tmp_path / "cache")
    p = driver(repo, cache, "slow")
    deadline = time.time() + 60
    while not (tmp_path / "started").exists():
        assert time.time() < deadline and p.poll() is None, p.stdout.read()
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert entries(cache) == []
    again = driver(repo, cache, "slow")
    out = again.communicate(timeout=120)[0]
    assert "RESULT 0 False" in out, out
    assert len(entries(cache)) == 1
