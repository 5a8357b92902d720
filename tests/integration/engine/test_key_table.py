"""Which steps of the README's plan get a new key for each kind of change (docs/engine.md, "The key").

Each row plans the README's command (nothing runs: `cm run script ... --dry-run` does the same) in
a copy of automation/, script/ and cmr.yaml, once as it is and once with the change, in a
subprocess that imports the copy's engine (a step's hooks import the library beside the engine
that plans, so an edit must be made in that copy), and compares the key of every step.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
README = "run-mlperf,inference,_full,_embedded"
# the README's command, and its TEST06 (an open-division run has none unless asked), so that the
# compliance steps are in the table too
README_INPUTS = {"model": "llama2-70b-99.9", "division": "open", "device": "cpu", "execution_mode": "test",
                 "compliance": "yes"}

KEYS = r"""
import json, os, sys
root, cache_dir, request = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, os.path.join(root, "automation"))
from cmengine import cli
s = cli.Session([], cache_dir=cache_dir or None)
assert os.path.realpath(s.registry.repos[0].path) == os.path.realpath(root)
plan = s.plan(dict(request, action="run", quiet=True))
print(json.dumps(sorted([n.alias + " " + ",".join(n.selection.names), n.key, n.manifest.cache]
                        for n in plan.nodes.values())))
"""

CACHED = {"get-python3 ", "install-python-venv name.ml", "install-vllm ", "get-ml-model-smollm2 fp32",
          "get-mlperf-inference-src r6.1", "get-mlperf-inference-loadgen r6.1",
          "get-mlperf-inference-loadgen r6.1,test06",   # TEST06's own LoadGen (built from the source on v4.1)
          "get-preprocessed-dataset-openorca embedded,r2-downloader",
          "install-ray "}   # planned: whether it runs is decided by run-vllm-server's preprocess (a Ray cluster)
# --docker's image step (planned always, run only with --docker; never cached): it describes the
# project as the record does (reproduce/capture, which imports mlperf_llm.rounds), and run-vllm-server,
# whose prehook it is, holds its key
IMAGE = "build-mlperf-image "
# the steps that read the results folder and the test's size, and the ones that run on them
BENCHMARK = {"app-mlperf-inference r6.1,vllm", "process-mlperf-accuracy embedded",
             "run-mlperf-compliance-test06 ", "generate-mlperf-inference-submission r6.1",
             "run-mlperf-inference-submission-checker r6.1", "run-mlperf-inference-app embedded,full,r6.1"}
# every step whose key holds the inference source's or LoadGen's (they import mlperf_llm.rounds,
# which imports mlperf_llm.benchmarks)
ROUND_AWARE = BENCHMARK | {"get-mlperf-inference-src r6.1", "get-mlperf-inference-loadgen r6.1",
                           "get-mlperf-inference-loadgen r6.1,test06", IMAGE}
# the data set step and the steps whose dependencies hold it (the submission steps run after the
# benchmark, as the top step's posthook_deps, and do not)
DATASET_AND_USERS = {"get-preprocessed-dataset-openorca embedded,r2-downloader", "app-mlperf-inference r6.1,vllm",
                     "process-mlperf-accuracy embedded", "run-mlperf-compliance-test06 ",
                     "run-mlperf-inference-app embedded,full,r6.1"}

NEW_ROUND_ROW = '''    Round("4.0", _LLAMA2,
          Seeds(1, 2, 3), "4.0.0", "4.0.9", "4.0.9", "v4.0", "v4.0", "script", "v4",
          mlperf_conf_in_measurements=True, calibration_doc=False, interactive="none"),
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    dest = tmp_path_factory.mktemp("keytable") / "cm4mlperf-llm"
    for name in ("automation", "script"):
        shutil.copytree(os.path.join(ROOT, name), dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(os.path.join(ROOT, "cmr.yaml"), dest / "cmr.yaml")
    return dest


def keys(repo, cwd, inputs=None, cache_dir="", home=None):
    """{step (alias and variations): (set of keys, cached)} of the README's plan."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CM_", "CM4MLPERF_"))}
    env["CM_REPOS"] = str(home or cwd / "CM")
    request = {"tags": README, **README_INPUTS, **(inputs or {})}
    out = subprocess.run([sys.executable, "-c", KEYS, str(repo), cache_dir, json.dumps(request)],
                         capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120)
    assert out.returncode == 0, out.stderr
    steps: dict = {}
    for label, key, cached in json.loads(out.stdout):
        steps.setdefault(label, (set(), cached))[0].add(key)
    return steps


def edited(path, text):
    before = path.read_text()
    path.write_text(text(before))
    return lambda: path.write_text(before)


def add_round_row(text):
    anchor = '    Round("4.1", _LLAMA2'
    assert anchor in text
    return text.replace(anchor, NEW_ROUND_ROW + anchor, 1)


NEW_BENCHMARK = '''    Benchmark(
        name="mixtral-8x7b", family="mixtral-8x7b", loadgen_key="mixtral-8x7b", interactive_key="",
        category="datacenter", scenarios=("Offline", "Server"), required=(("Offline",), ("Server",)),
        dataset_tags="get,dataset,mixtral", dataset_rows=15000, performance_sample_count=15000,
        prompt="", max_new_tokens=1024, min_new_tokens=2,
        accuracy=AccuracySpec((("ROUGE1", 45.5989),), 0.99, "TOKENS_PER_SAMPLE", 144.84),
        runnable="not yet"),
'''


def add_benchmark(text):
    anchor = '    _llama2("llama2-70b-99", 0.99),'
    assert anchor in text
    return text.replace(anchor, NEW_BENCHMARK + anchor, 1)


def comment(text):
    return text + "\n# edited by a test\n"


ROWS = [   # (change, inputs, file edited in the copy and how, another CM home, steps that re-key)
    ("--results_dir", {"results_dir": "/elsewhere/results"}, None, False, BENCHMARK),
    ("--test_query_count", {"test_query_count": "7"}, None, False, BENCHMARK),
    ("an engine module that plans (cmengine/graph.py)", {}, ("cmengine/graph.py", comment), False, set()),
    ("the engine's key rules (cmengine/keys.py)", {}, ("cmengine/keys.py", comment), False, set()),
    ("an engine module that runs steps (cmengine/executor.py)", {}, ("cmengine/executor.py", comment),
     False, set()),
    ("a library module the dataset step imports (datasets/embedded.py)", {},
     ("mlperf_llm/datasets/embedded.py", comment), False, DATASET_AND_USERS),
    ("a new row in the round table (rounds.py)", {}, ("mlperf_llm/rounds.py", add_round_row), False,
     ROUND_AWARE | {"run-vllm-server start"}),
    ("a new entry in the benchmark table (benchmarks.py)", {}, ("mlperf_llm/benchmarks.py", add_benchmark), False,
     ROUND_AWARE | {"run-vllm-server start"}),      # it reads the benchmark's GPU layouts (vllm/layout.py)
    ("a new CM home (CM_REPOS)", {}, None, True, set()),
    # a replay's lock for the model steps' venv (reproduce/replay._model_env_plan): that venv, the model
    # made in it and the steps that hold the model (the data set is tokenized by its tokenizer); never
    # another venv (vLLM's), LoadGen or the inference source
    ("the ml venv's lock (--adr.ml-venv.env.CM_VENV_LOCK)", {"adr": {"ml-venv": {"env": {"CM_VENV_LOCK": "/r/ml.txt"}}}},
     None, False, {"install-python-venv name.ml", "get-ml-model-smollm2 fp32"} | DATASET_AND_USERS),
]


@pytest.mark.parametrize("change, inputs, edit, new_home, rekeyed", ROWS, ids=[r[0] for r in ROWS])
def test_which_steps_rekey(repo, tmp_path, change, inputs, edit, new_home, rekeyed):
    before = keys(repo, tmp_path)
    assert CACHED | BENCHMARK <= set(before), sorted(before)
    assert {s for s, (_, cached) in before.items() if cached} == CACHED
    undo = edited(repo / "automation" / edit[0], edit[1]) if edit else None
    try:
        after = keys(repo, tmp_path, inputs, home=tmp_path / "other-home" if new_home else None)
    finally:
        if undo:
            undo()
    assert set(after) == set(before), f"{change}: the plan's steps changed"
    changed = {s for s in before if before[s][0] != after[s][0]}
    assert changed == rekeyed, (f"{change}: re-keyed {sorted(changed - rekeyed)} that must not; "
                                f"kept {sorted(rekeyed - changed)} that must re-key")


def test_v41_plans_differing_only_in_results_dir_share_one_inference_source(repo, tmp_path):
    plans = [keys(repo, tmp_path, {"tags": README + ",_r4.1", "results_dir": str(tmp_path / d)})
             for d in ("a", "b")]
    sources = [p["get-mlperf-inference-src r4.1"][0] for p in plans]
    assert len(sources[0]) == 1, "a v4.1 run plans its inference source twice: " + str(sources[0])
    assert sources[0] == sources[1]


def test_the_folder_a_run_starts_in_rekeys_only_what_writes_there(repo, tmp_path):
    """The results and submission folders default to the folder the command runs in: the steps that
    write them re-key, no other (a step's default that names that folder must not enter its key,
    nor the keys of the steps above it: --docker's image step writes its facts file there)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    home = tmp_path / "CM"
    a, b = keys(repo, tmp_path / "a", home=home), keys(repo, tmp_path / "b", home=home)
    assert set(a) == set(b) and IMAGE in a
    assert {s for s in a if a[s][0] != b[s][0]} == BENCHMARK
