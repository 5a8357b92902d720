import hashlib
import os
import tarfile

import pytest

from mlperf_llm.submission.errors import SubmissionError
from mlperf_llm.submission.tarball import pack


def make_tree(root):
    for rel, text in {"README.md": "r", "open/org/systems/s.json": "{}", "open/org/code/m/i/README.md": "c"}.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(text)


def test_reproducible_tarball_with_sha1(tmp_path):
    tree = tmp_path / "sub"
    make_tree(str(tree))
    a = pack(str(tree), "org", str(tmp_path / "a"))
    os.utime(tree / "README.md", (1, 1))            # times do not matter
    b = pack(str(tree), "org", str(tmp_path / "b"))
    assert a.sha1 == b.sha1 == hashlib.sha1(open(a.path, "rb").read()).hexdigest()
    assert open(a.sha1_path).read() == f"{a.sha1}  sub_org.tar.gz\n"
    with tarfile.open(a.path) as t:
        names = t.getnames()
        assert names[0] == "README.md" and "open/org/systems/s.json" in names
        assert {m.uid for m in t.getmembers()} == {0}
    assert not [n for n in os.listdir(tmp_path / "a") if n.endswith(".partial")]


def test_a_tree_breaking_the_rules_is_not_packed(tmp_path):
    tree = tmp_path / "sub"
    make_tree(str(tree))
    (tree / "open" / "org" / ".DS_Store").write_text("x")
    with pytest.raises(SubmissionError, match="dotfile"):
        pack(str(tree), "org")
    assert not os.path.exists(tmp_path / "sub_org.tar.gz")


def test_tarball_inside_the_tree_is_refused(tmp_path):
    make_tree(str(tmp_path / "sub"))
    with pytest.raises(SubmissionError, match="inside the tree"):
        pack(str(tmp_path / "sub"), "org", str(tmp_path / "sub" / "out"))


def test_two_trees_in_one_folder_keep_a_tarball_each_and_the_default_tree_the_usual_name(tmp_path):
    """Named after the tree: a second submission made beside the first no longer replaces the
    first's tarball (both were mlperf_submission_<submitter>.tar.gz, the first run's printed sha1
    then wrong)."""
    for name in ("mlperf_submission", "gptoss_sub"):
        make_tree(str(tmp_path / name))
    first = pack(str(tmp_path / "mlperf_submission"), "org")
    second = pack(str(tmp_path / "gptoss_sub"), "org")
    assert os.path.basename(first.path) == "mlperf_submission_org.tar.gz"
    assert os.path.basename(second.path) == "gptoss_sub_org.tar.gz" and second.sha1_path.endswith("gptoss_sub_org.sha1")
    assert hashlib.sha1(open(first.path, "rb").read()).hexdigest() == first.sha1
