"""A step that found something outside the cache re-checks it on reuse (cache_recheck_env):
on fixture steps, then get-python3 itself with an interpreter that changes under it."""
import os
import stat

from enginefixtures import Runner, make_repo
from cmengine.registry import Repo

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

FIND_SH = ('echo run >> "$CM_COUNTER_DIR/finder"\n'
           'echo "CM_TOOL_PATH=$CM_TOOL_CANDIDATE" > tmp-run-env.out\n')
USE_SH = 'echo run >> "$CM_COUNTER_DIR/user"\n'


def counts(d):
    return {n: len((d / n).read_text().splitlines()) if (d / n).exists() else 0
            for n in ("finder", "user")}


def test_a_changed_found_file_reruns_its_step_and_what_was_built_on_it(tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 1.0\n")
    counter = tmp_path / "counts"
    counter.mkdir()
    monkeypatch.setenv("CM_COUNTER_DIR", str(counter))
    repo = make_repo(str(tmp_path / "repos"), {
        "finder": ({"tags": ["finder"], "cache": True, "default_env": {"CM_TOOL_CANDIDATE": str(tool)},
                    "new_env_keys": ["CM_TOOL_PATH"], "cache_recheck_env": ["CM_TOOL_PATH"]},
                   {"run.sh": FIND_SH}),
        "user": ({"tags": ["user"], "cache": True, "deps": [{"tags": "finder"}]}, {"run.sh": USE_SH})})
    r = Runner([repo], str(tmp_path / "cache"))
    assert r.run("user")["return"] == 0
    assert r.run("user")["cached"] is True
    assert counts(counter) == {"finder": 1, "user": 1}

    tool.write_text("#!/bin/sh\necho 2.0\n")
    verdicts = {p["script"]: p for p in r.plan("user")["plan"]}
    assert verdicts["finder"]["verdict"] == "run"
    assert verdicts["finder"]["reason"].startswith(f"{tool} changed since entry ")
    assert verdicts["user"]["verdict"] == "run"
    assert verdicts["user"]["reason"].endswith("exists but its dependency finder will be rebuilt")
    assert r.run("user")["return"] == 0
    assert counts(counter) == {"finder": 2, "user": 2}
    assert r.run("user")["cached"] is True          # the new entry records the new file


def fake_python(path, version):
    """An interpreter as get-python3 sees one: it answers the version probe."""
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_changed_interpreter_reruns_get_python3(tmp_path):
    py = tmp_path / "bin" / "python3.11"
    py.parent.mkdir()
    fake_python(py, "3.11.4")
    r = Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"))
    first = r.run("get,python3", python=str(py))
    assert first["return"] == 0, first
    assert first["new_env"]["CM_PYTHON_VERSION"] == "3.11.4"
    again = r.plan("get,python3", python=str(py))["plan"]
    assert [p["verdict"] for p in again if p["script"] == "get-python3"] == ["cached"]

    fake_python(py, "3.11.9")                        # e.g. apt upgraded it in place
    step = [p for p in r.plan("get,python3", python=str(py))["plan"] if p["script"] == "get-python3"][0]
    assert step["verdict"] == "run"
    assert step["reason"].startswith(f"{py} changed since entry {first['key'][:12]} was cached")
    rerun = r.run("get,python3", python=str(py))
    assert rerun["return"] == 0 and rerun["cached"] is False
    assert rerun["new_env"]["CM_PYTHON_VERSION"] == "3.11.9"
    assert r.run("get,python3", python=str(py))["cached"] is True
