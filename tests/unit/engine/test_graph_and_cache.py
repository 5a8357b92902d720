"""Keys, sharing and verdicts, computed in-process on fixture repositories (no subprocess)."""
import os

import pytest

from cmengine import cache
from cmengine.errors import CycleError
from cmengine.fingerprint import Fingerprints
from cmengine.graph import Planner, Request
from cmengine.registry import Registry
from enginefixtures import make_repo


def plan(repo, tags, **kw):
    return Planner(Registry([repo]), Fingerprints(), Request(tags=tags.split(","), **kw)).plan()


@pytest.fixture
def repo(tmp_path):
    return make_repo(str(tmp_path), {
        "top": {"tags": ["top"], "deps": [{"tags": "os"}, {"tags": "lib", "env": {"CM_PKG": "a"}},
                                          {"tags": "lib", "env": {"CM_PKG": "b"}}],
                "input_mapping": {"size": "CM_SIZE"}},
        "os": {"tags": ["os"], "new_env_keys": ["CM_OS_*"]},
        "lib": {"tags": ["lib"], "cache": True, "cache_key_env": ["CM_OS_TYPE"]},
        "secret": {"tags": ["secret"], "input_mapping": {"token": "HF_TOKEN"}},
    })


def test_identical_nodes_are_shared(repo):
    p = plan(repo, "top")
    aliases = sorted(n.alias for n in p.nodes.values())
    assert aliases == ["lib", "lib", "os", "top"]   # two libs (different CM_PKG)


def test_key_depends_on_inputs_and_is_stable(repo):
    k1 = plan(repo, "top", inputs={"size": "1"}).root.key
    assert k1 == plan(repo, "top", inputs={"size": "1"}).root.key
    assert k1 != plan(repo, "top", inputs={"size": "2"}).root.key


def test_dep_entry_env_is_part_of_the_key(repo):
    p = plan(repo, "top")
    libs = [n for n in p.nodes.values() if n.alias == "lib"]
    assert {n.components["env"]["CM_PKG"] for n in libs} == {"a", "b"}


def test_value_from_an_earlier_sibling_is_keyed_by_that_sibling(repo):
    # lib reads CM_OS_TYPE, which the os step before it in top's deps produces at run time
    p = plan(repo, "top")
    lib = next(n for n in p.nodes.values() if n.alias == "lib")
    os_node = next(n for n in p.nodes.values() if n.alias == "os")
    assert lib.components["env_from_deps"]["CM_OS_TYPE"] == os_node.key


def test_secret_enters_key_only_as_a_hash(repo):
    p = plan(repo, "secret", inputs={"token": "hf_abc"})
    assert "hf_abc" not in str(p.root.components)
    assert p.root.key != plan(repo, "secret", inputs={"token": "hf_xyz"}).root.key


def test_cycle_error_chain(tmp_path):
    r = make_repo(str(tmp_path), {"a": {"tags": ["a"], "deps": [{"tags": "b"}]},
                                  "b": {"tags": ["b"], "deps": [{"tags": "c"}]},
                                  "c": {"tags": ["c"], "deps": [{"tags": "a"}]}})
    with pytest.raises(CycleError) as e:
        plan(r, "a")
    assert str(e.value).startswith("dependency cycle: a -> b -> c -> a")


def test_verdicts_and_miss_explanation(repo, tmp_path):
    store = cache.Store(str(tmp_path / "cache"))
    p = plan(repo, "top")
    cache.decide(p, store)
    lib = next(n for n in p.nodes.values() if n.alias == "lib")
    assert lib.verdict.action == "run" and "no entry yet" in lib.verdict.reason
    folder = store.new_folder("lib", lib.key)
    store.publish(lib.key, folder, {"alias": "lib", "components": lib.components})
    p2 = plan(repo, "top")
    cache.decide(p2, store)
    verdicts = {n.key: n.verdict.action for n in p2.nodes.values() if n.alias == "lib"}
    assert verdicts[lib.key] == "cached"
    assert "not cached" in p2.root.verdict.reason


def test_a_step_below_a_cached_step_alone_is_planned_as_not_run_and_says_which(tmp_path):
    """A cached step replays its entry and runs nothing, its dependencies included: the plan said
    "run, not cached" for them (detect-os under a cached get-python3), and the run ran none. A step
    the run reaches by another path too still runs."""
    repo = make_repo(str(tmp_path / "repo"), {
        "top": {"tags": ["top"], "deps": [{"tags": "model"}, {"tags": "shared"}]},
        "model": {"tags": ["model"], "cache": True, "deps": [{"tags": "torch"}, {"tags": "shared"}]},
        "torch": {"tags": ["torch"], "deps": [{"tags": "os"}]},
        "os": {"tags": ["os"]},
        "shared": {"tags": ["shared"]},
    })
    store = cache.Store(str(tmp_path / "cache"))
    p = plan(repo, "top")
    cache.decide(p, store)
    assert {n.alias: n.verdict.action for n in p.nodes.values()} == {a: "run" for a in ("top", "model", "torch", "os", "shared")}
    model = next(n for n in p.nodes.values() if n.alias == "model")
    store.publish(model.key, store.new_folder("model", model.key), {"alias": "model", "components": model.components})
    p = plan(repo, "top")
    cache.decide(p, store)
    verdicts = {n.alias: n.verdict for n in p.nodes.values()}
    assert {a: v.action for a, v in verdicts.items()} == {"top": "run", "model": "cached", "torch": "skip",
                                                         "os": "skip", "shared": "run"}
    assert verdicts["os"].reason == "not run: model comes from its cache entry"


def test_entry_of_another_key_is_not_accepted(tmp_path):
    store = cache.Store(str(tmp_path / "cache"), warn=lambda m: None)
    folder = store.new_folder("x", "a" * 64)
    store.publish("a" * 64, folder, {"alias": "x"})
    os.rename(os.path.join(store.root, "entries", "a" * 64), os.path.join(store.root, "entries", "b" * 64))
    assert store.lookup("b" * 64) is None
    assert store.lookup("a" * 64) is None


def test_keys_produced_by_own_deps_or_own_outputs_do_not_couple_to_siblings(tmp_path):
    r = make_repo(str(tmp_path), {
        "top": {"tags": ["top"], "deps": [{"tags": "py"}, {"tags": "venv"}, {"tags": "data"}, {"tags": "data"}]},
        "py": {"tags": ["py"], "cache": True, "new_env_keys": ["CM_PY_*"]},
        "venv": {"tags": ["venv"], "cache": True, "deps": [{"tags": "py"}], "cache_key_env": ["CM_PY_BIN"]},
        "data": {"tags": ["data"], "cache": True, "cache_key_env": ["CM_DATA_*"], "new_env_keys": ["CM_DATA_PATH"]},
    })
    p = plan(r, "top")
    assert sorted(n.alias for n in p.nodes.values()) == ["data", "py", "top", "venv"]


def test_library_code_a_hook_imports_is_part_of_the_key(tmp_path, monkeypatch):
    import cmengine.keys as keys
    auto = tmp_path / "automation"
    (auto / "mlperf_llm" / "area").mkdir(parents=True)
    lib = auto / "mlperf_llm" / "area" / "work.py"
    lib.write_text("X = 1\n")
    monkeypatch.setattr(keys, "AUTOMATION_DIR", str(auto))
    r = make_repo(str(tmp_path), {"s": ({"tags": ["s"], "cache": True},
                                        {"customize.py": "from mlperf_llm.area import work\n"})})
    (auto / "mlperf_llm" / "area" / "unrelated.py").write_text("Y = 1\n")
    k1 = plan(r, "s").root.key
    (auto / "mlperf_llm" / "area" / "unrelated.py").write_text("Y = 2\n")
    assert plan(r, "s").root.key == k1          # a module the hooks never reach: same entry
    lib.write_text("X = 2\n")
    assert plan(r, "s").root.key != k1


def test_failed_builds_are_kept_for_their_logs_but_bounded(tmp_path):
    store = cache.Store(str(tmp_path / "cache"), warn=lambda m: None)
    kept = []
    for n in range(5):
        folder = store.new_folder("install-vllm", f"{n:02d}" + "a" * 62)
        with open(os.path.join(folder, "install-vllm.log"), "w") as f:
            f.write(f"attempt {n}\n")
        os.utime(folder, (1000 + n, 1000 + n))
        kept.append(store.discard(folder))
    other = store.discard(store.new_folder("detect-os", "b" * 64))
    left = sorted(os.listdir(os.path.dirname(kept[0])))
    assert sorted(os.path.basename(p) for p in kept[-3:] + [other]) == left
    assert open(os.path.join(kept[-1], "install-vllm.log")).read() == "attempt 4\n"


@pytest.mark.parametrize("hooks, rekeyed", [
    ("def postprocess(i):\n    return {'return': 0}\n", False),   # runs after posthook_deps
    ("def validate(i):\n    return {'return': 0}\n", False),
    ("def preprocess(i):\n    return {'return': 0}\n", True),     # may set CM_APP_* for them
])
def test_posthook_deps_are_keyed_by_the_callers_inputs_only_if_a_part_of_it_ran_before(tmp_path, hooks, rekeyed):
    repo = make_repo(str(tmp_path), {
        "app": ({"tags": ["app"], "new_env_keys": ["CM_APP_*"], "input_mapping": {"out": "CM_OUT_DIR"},
                 "posthook_deps": [{"tags": "src"}]}, {"customize.py": hooks}),
        "src": {"tags": ["src"], "cache": True, "input_mapping": {"path": "CM_APP_SRC_PATH"}},
    })

    def src_key(out):
        p = plan(repo, "app", inputs={"out": out})
        return next(e.node.key for e in p.root.edges if e.node is not None and e.node.alias == "src")
    assert (src_key("/a") != src_key("/b")) is rekeyed


def test_a_relative_path_input_is_from_the_folder_cm_was_started_in_and_keys_by_it(tmp_path, monkeypatch):
    """path_inputs: a step runs in a folder of its own, so an input that names a file or folder, typed
    relative, is made absolute from where `cm` was started, for the top step and a dependency it is
    routed to alike (the same relative name in two folders is two keys), and the plan keeps those
    values beside the typed request (`paths`); other inputs, URLs and absolute paths as typed."""
    repo = make_repo(str(tmp_path / "repo"), {
        "top": {"tags": ["top"], "deps": [{"tags": "src"}],
                "input_mapping": {"out": "CM_OUT_DIR", "label": "CM_LABEL"}, "path_inputs": ["out"]},
        "src": {"tags": ["src"], "cache": True, "input_mapping": {"src_path": "CM_SRC_PATH"},
                "path_inputs": ["src_path"], "cache_key_env": ["CM_SRC_PATH"]},
    })
    keys = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        p = plan(repo, "top", inputs={"out": "results", "label": "results", "src_path": "../inference"})
        src = next(e.node for e in p.root.edges if e.node is not None and e.node.alias == "src")
        assert p.root.env["CM_OUT_DIR"] == str(tmp_path / folder / "results")
        assert p.root.env["CM_LABEL"] == "results"
        assert src.env["CM_SRC_PATH"] == str(tmp_path / "inference")
        assert p.paths == {"out": str(tmp_path / folder / "results"), "src_path": str(tmp_path / "inference")}
        keys.append(p.root.key)
    assert keys[0] != keys[1]
    p = plan(repo, "top", inputs={"out": "/abs/results", "src_path": "https://github.com/mlcommons/inference"})
    src = next(e.node for e in p.root.edges if e.node is not None and e.node.alias == "src")
    assert p.root.env["CM_OUT_DIR"] == "/abs/results" and src.env["CM_SRC_PATH"] == "https://github.com/mlcommons/inference"


def test_a_path_input_that_is_no_input_of_the_script_is_refused(tmp_path):
    repo = make_repo(str(tmp_path / "repo"), {"top": {"tags": ["top"], "input_mapping": {"out": "CM_OUT"},
                                                      "path_inputs": ["outt"]}})
    with pytest.raises(Exception, match=r"top/_cm.yaml:\d+: 'outt' is not an input of this script \(input_mapping\)"):
        plan(repo, "top")
