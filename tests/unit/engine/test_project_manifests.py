"""This project's steps declare exactly the env names they output, and the inputs that name files or
folders (path_inputs) (docs/engine.md, "The manifest").

A wildcard in `new_env_keys` (`CM_MLPERF_*`) hands up whatever happens to be in the step's env,
inputs included, and makes every later step that reads a matching name depend on this one: a
`--results_dir` then re-keyed the cached inference source of a v4.1 run. The engine still takes
wildcards (cm4mlops' scripts use them); this project's manifests do not.
"""
import glob
import os

import pytest

from cmengine.manifest import load_manifest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FOLDERS = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "script", "*", "_cm.yaml")))
WILD = ("*", "?", "[")


def output_lists(folder):
    """(where, new_env_keys) for the manifest, each variation and each version."""
    m = load_manifest(folder)
    yield "new_env_keys", m.get("new_env_keys") or []
    for name, v in m.variations.items():
        yield f"variations.{name}.new_env_keys", v.data.get("new_env_keys") or []
    for ver, data in (m.get("versions") or {}).items():
        yield f"versions.{ver}.new_env_keys", data.get("new_env_keys") or []


def test_every_step_of_this_project_is_checked():
    assert len(FOLDERS) >= 20 and any(f.endswith("run-mlperf-inference-app") for f in FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS, ids=os.path.basename)
def test_new_env_keys_name_each_output_exactly(folder):
    wild = [f"{where}: {k}" for where, keys in output_lists(folder) for k in keys
            if "<<<" not in k and any(c in k for c in WILD)]
    assert not wild, (f"{os.path.relpath(folder, ROOT)}/_cm.yaml has a wildcard in its outputs: "
                      f"{'; '.join(wild)}. List the exact names the step sets (its customize.py, run.sh "
                      "and the library code they call); a name known only at run time is `<<<VAR>>>`, "
                      "VAR holding that name")


def test_the_check_finds_a_wildcard(tmp_path):
    from enginefixtures import make_repo
    repo = make_repo(str(tmp_path), {"s": {"tags": ["s"], "new_env_keys": ["CM_X"],
                                           "variations": {"v": {"new_env_keys": ["CM_Y_*"]}}}})
    found = [k for _, keys in output_lists(os.path.join(repo.path, "script", "s")) for k in keys
             if any(c in k for c in WILD)]
    assert found == ["CM_Y_*"]


def _outputs(alias):
    return set(load_manifest(os.path.join(ROOT, "script", alias)).get("new_env_keys"))


def test_library_producers_name_only_declared_outputs():
    """Where a step's outputs come from a library function, every name it can produce is listed."""
    from mlperf_llm.models.quant_eval import METRICS, QuantComparison
    from mlperf_llm.sysinfo.envmap import gpu_env
    from mlperf_llm.sysinfo.gpu import AcceleratorInfo, Gpu

    table = QuantComparison("fp8", 4, {m: 1.0 for m in METRICS}, {m: 1.0 for m in METRICS}, 2)
    assert set(table.env()) <= _outputs("quantize-ml-model")
    gpu = Gpu(0, "NVIDIA H100 80GB HBM3", 81559, 1980, 1755, "550.54", 5, 16)
    full = gpu_env(AcceleratorInfo("nvidia", (gpu,), "12.4", "NVLink"))
    assert set(full) == _outputs("detect-gpu")


# inputs whose name says they are a file or folder: each such input of this project's steps is in
# its path_inputs (a step runs in a folder of its own: docs/engine.md, path_inputs), unless it may
# also be something else
PATHLIKE_SUFFIXES = ("_dir", "_path", "_src", "_json", "_file", "_source", "_archive", "_record", "_desc", "_to")
PATHLIKE = {"from", "lock", "vllm_lock", "run_lock", "facts", "save", "squashfs", "store", "load", "checkpoint",
            "audit_conf", "metadata", "embedded_reference"}
NOT_ONLY_A_PATH = {
    "tokenizer_path": "a model folder or a hub id",
    "server_record": "several files (os.pathsep between)",
    "trust_record": "yes or no",
}


@pytest.mark.parametrize("folder", FOLDERS, ids=os.path.basename)
def test_inputs_that_name_files_or_folders_are_path_inputs(folder):
    m = load_manifest(folder)
    declared = set(m.get("path_inputs") or ())
    pathlike = {k for k in (m.get("input_mapping") or {})
                if (k in PATHLIKE or k.endswith(PATHLIKE_SUFFIXES)) and k not in NOT_ONLY_A_PATH}
    assert not pathlike - declared, (
        f"{os.path.relpath(folder, ROOT)}/_cm.yaml: {sorted(pathlike - declared)} name files or folders but are not in "
        "its path_inputs: typed relative, they would be taken from the step's own folder, not from where cm was started")
