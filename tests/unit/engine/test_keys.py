"""The key rules (cmengine/keys.py), one row per kind of change, on a small fixture repository.

The fixture mirrors the README's chain: `app` (not cached) takes --results_dir and --count, needs
`src` (cached, a checkout) and `bench` (reads both inputs and the checkout), and after its own
preprocess runs `report` (a posthook dependency that needs `src` too). tests/integration/engine/
test_key_table.py holds the same table on the real plan.
"""
import pytest

import cmengine.keys as keys
from cmengine.fingerprint import Fingerprints
from cmengine.graph import Planner, Request
from cmengine.registry import Registry
from enginefixtures import make_repo

HOOK = "def preprocess(i):\n    return {'return': 0}\n"


def scripts(app_outputs):
    return {
        "app": ({"tags": ["app"], "input_mapping": {"results_dir": "CM_APP_RESULTS_DIR", "count": "CM_APP_COUNT"},
                 "deps": [{"tags": "src"}, {"tags": "bench"}], "posthook_deps": [{"tags": "report"}],
                 "new_env_keys": app_outputs}, {"customize.py": HOOK}),
        "src": ({"tags": ["src"], "cache": True, "input_mapping": {"src_path": "CM_APP_SRC_PATH"},
                 "new_env_keys": ["CM_SRC_PATH"]}, {"customize.py": "from lib import checkout\n"}),
        "bench": ({"tags": ["bench"], "cache_key_env": ["CM_APP_RESULTS_DIR", "CM_APP_COUNT", "CM_SRC_PATH"]},
                  {"customize.py": "from lib import bench\n"}),
        "report": {"tags": ["report"], "deps": [{"tags": "src"}]},
    }


@pytest.fixture
def world(tmp_path, monkeypatch):
    lib = tmp_path / "automation" / "lib"
    lib.mkdir(parents=True)
    for name in ("__init__", "checkout", "bench", "unused"):
        (lib / f"{name}.py").write_text("X = 1\n")
    monkeypatch.setattr(keys, "AUTOMATION_DIR", str(tmp_path / "automation"))
    return tmp_path


def plan_keys(root, app_outputs=("CM_APP_REPORT",), **inputs):
    repo = make_repo(str(root / "repo"), scripts(list(app_outputs)))
    plan = Planner(Registry([repo]), Fingerprints(), Request(tags=["app"], inputs=inputs)).plan()
    out: dict = {}
    for n in plan.nodes.values():
        out.setdefault(n.alias, set()).add(n.key)
    return out


def edit(path):
    def change(root):
        p = root / path
        p.write_text((p.read_text() if p.exists() else "") + "Y = 2\n")
    return change


ALL = {"app", "src", "bench", "report"}
ROWS = [   # (change, inputs before -> after, edit, the steps that re-key)
    ("--results_dir", {"results_dir": "/a"}, {"results_dir": "/b"}, None, {"app", "bench"}),
    ("--count", {"count": "1"}, {"count": "2"}, None, {"app", "bench"}),
    ("--src_path: the source's own input", {}, {"src_path": "/mine"}, None, ALL),
    ("a library module one step imports", {}, {}, edit("automation/lib/bench.py"), {"app", "bench"}),
    ("a library module the source imports", {}, {}, edit("automation/lib/checkout.py"), ALL),
    ("a library module no step imports", {}, {}, edit("automation/lib/unused.py"), set()),
    ("the package's __init__.py, which every import runs", {}, {}, edit("automation/lib/__init__.py"), ALL),
    ("a file in a step's folder", {}, {}, edit("repo/fixture/script/bench/notes.txt"), {"app", "bench"}),
]


@pytest.mark.parametrize("change, before, after, edit_fn, rekeyed", ROWS, ids=[r[0] for r in ROWS])
def test_which_steps_rekey(world, change, before, after, edit_fn, rekeyed):
    k1 = plan_keys(world, **before)
    if edit_fn:
        edit_fn(world)
    k2 = plan_keys(world, **after)
    assert set(k1) == set(k2) == ALL
    assert all(len(v) == 1 for v in k1.values()), f"{change}: a step planned twice: {k1}"
    assert {a for a in ALL if k1[a] != k2[a]} == rekeyed, change


def test_a_new_cm_home_rekeys_nothing(world, monkeypatch):
    monkeypatch.setenv("CM_REPOS", str(world / "home-a"))
    k1 = plan_keys(world)
    monkeypatch.setenv("CM_REPOS", str(world / "home-b"))
    assert plan_keys(world) == k1


@pytest.mark.parametrize("outputs, shared", [
    (["CM_APP_REPORT"], True),    # exact: app's preprocess sets none of what src reads
    (["CM_APP_*"], False),        # a wildcard (as cm4mlops writes): may set CM_APP_SRC_PATH for report's src
])
def test_a_wildcard_output_of_the_caller_keys_its_later_dependencies_by_its_inputs(world, outputs, shared):
    """Why this project's manifests list exact outputs; upstream wildcards keep their meaning."""
    a = plan_keys(world, outputs, results_dir="/a")
    b = plan_keys(world, outputs, results_dir="/b")
    assert (len(a["src"]) == 1 and a["src"] == b["src"]) is shared


def test_producers_before_a_node_less_its_own_outputs():
    pending = [(["CM_SRC_PATH", "CM_X"], "k1"), (["CM_SRC_*"], "k2")]
    assert keys.received_from_others(pending, ["CM_SRC_PATH"]) == [(["CM_X"], "k1"), (["CM_SRC_*"], "k2")]
    assert keys.overlap("CM_SRC_*", "CM_SRC_PATH") and keys.overlap("CM_A_*", "CM_*")
    assert not keys.overlap("CM_SRC_PATH", "CM_SRC_TAG")


def test_a_secret_enters_the_key_as_its_hash():
    class Node:
        declared = ["HF_TOKEN", "CM_X"]
        env = {"HF_TOKEN": "hf_abc", "CM_X": "1"}
    values = keys.env_values(Node())
    assert values["CM_X"] == "1" and values["HF_TOKEN"].startswith("sha256:")
    assert "hf_abc" not in str(values)
