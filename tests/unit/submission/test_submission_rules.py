import os

from mlperf_llm.submission.rules import find_violations


def gen(root, files: dict):
    """Build a tree from {relative path: text or None (folder) or int (size in bytes, sparse)}."""
    for rel, content in files.items():
        path = os.path.join(root, rel)
        if content is None:
            os.makedirs(path, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, int):
            with open(path, "wb") as f:
                f.truncate(content)
        else:
            with open(path, "w") as f:
                f.write(content)


RES = "closed/org/results/sys/llama2-70b-99/Offline"
COMP = "closed/org/compliance/sys/llama2-70b-99/Offline/TEST06"


def rules_of(tmp_path, files):
    gen(str(tmp_path), files)
    return {(v.path, v.rule.split(" (")[0]) for v in find_violations(str(tmp_path))}


def test_a_clean_tree_has_no_violation(tmp_path):
    assert rules_of(tmp_path, {"README.md": "x", f"{RES}/accuracy/accuracy.txt": "hash=ab12\n",
                               f"{RES}/accuracy/mlperf_log_accuracy.json": "[]" * 100,
                               f"{COMP}/accuracy/mlperf_log_accuracy.json": "x" * 20000,  # TEST06 kept whole
                               f"{COMP}/verify_accuracy.txt": "EOS check pass: True\n",
                               f"{RES}/TEST06/accuracy/mlperf_log_accuracy.json": "x" * 20000,  # v6.0 layout
                               }) == set()


def test_each_forbidden_thing_is_named(tmp_path):
    found = rules_of(tmp_path, {
        "closed/org/empty": None,
        "closed/org/.git/config": "x",
        "closed/org/code/m/i/.hidden": "x",
        "closed/org/code/m/i/my file.py": "x",
        "closed/org/code/m/i/__pycache__/a.cpython-311.pyc": "x",
        f"{RES}/performance/run_1/mlperf_log_trace.json": "[]",
        f"{RES}/performance/run_1/big.bin": 50 * 1024 * 1024 + 1,
        f"{RES}/accuracy/accuracy.txt": "{'rouge1': 1}\n",
        f"{RES}/accuracy/mlperf_log_accuracy.json": "x" * (10 * 1024 + 1),
    })
    assert found == {
        ("closed/org/empty", "empty folder"),
        ("closed/org/.git", "dot folder"),
        ("closed/org/code/m/i/.hidden", "dotfile"),
        ("closed/org/code/m/i/my file.py", "space in a file name"),
        ("closed/org/code/m/i/__pycache__", "__pycache__ folder"),
        (f"{RES}/performance/run_1/mlperf_log_trace.json", "LoadGen trace log"),
        (f"{RES}/performance/run_1/big.bin", "file over 50 MB"),
        (f"{RES}/accuracy/mlperf_log_accuracy.json", "accuracy log over 10 KB"),
    }


def test_a_hash_without_truncation_is_still_a_violation(tmp_path):
    found = rules_of(tmp_path, {f"{RES}/accuracy/accuracy.txt": "hash=ab12\n",
                                f"{RES}/accuracy/mlperf_log_accuracy.json": "x" * 20000})
    assert found == {(f"{RES}/accuracy/mlperf_log_accuracy.json", "accuracy log over 10 KB")}


def test_space_in_folder_and_violation_text_has_the_fix(tmp_path):
    gen(str(tmp_path), {"closed/my org/x.txt": "x"})
    (v,) = find_violations(str(tmp_path))
    assert v.path == "closed/my org" and "rename it without spaces" in str(v)
