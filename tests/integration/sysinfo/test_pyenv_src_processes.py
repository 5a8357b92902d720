"""The parts of pyenv and inference_src that run processes: pip in a target interpreter, venv
creation, git clones of a local stand-in of mlcommons/inference."""
import os
import subprocess
import sys

import pytest

from mlperf_llm.sysinfo.inference_src import InferenceSrcError, clone_at_tag, describe, get_source
from mlperf_llm.sysinfo.pyenv import PyEnvError, create_venv, installed_version


def test_installed_version_reads_the_target_interpreter():
    assert installed_version(sys.executable, "pytest") == __import__("pytest").__version__
    assert installed_version(sys.executable, "no-such-distribution-xyz") == ""
    with pytest.raises(PyEnvError, match="does not exist"):
        installed_version("/nonexistent/python", "pytest")


def test_venv_creation_failure_names_the_fix(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 'The virtual environment was not created successfully because ensurepip is "
                    "not available.' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(PyEnvError, match="apt-get install python3-venv"):
        create_venv(str(fake), str(tmp_path / "v"))
    assert not os.path.exists(tmp_path / "v" / "cm-venv-complete")


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@t"))


@pytest.fixture
def inference_repo(tmp_path):
    """A small local stand-in of mlcommons/inference with tags v5.0 and v5.1."""
    repo = tmp_path / "inference"
    for rel, text in {"loadgen/mlperf.conf": "*.*.qsl_rng_seed = 1\n", "tools/submission/submission_checker.py": "",
                      "language/llama2-70b/README.md": "llama2\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "v5.0")
    _git(repo, "tag", "v5.0")
    (repo / "loadgen" / "mlperf.conf").write_text("*.*.qsl_rng_seed = 2\n")
    _git(repo, "commit", "-q", "-am", "v5.1")
    _git(repo, "tag", "v5.1")
    return repo


def test_clone_at_tag(tmp_path, inference_repo):
    src = clone_at_tag(f"file://{inference_repo}", "v5.0", str(tmp_path / "out" / "inference"))
    assert src.tag == "v5.0" and len(src.commit) == 40
    assert open(src.mlperf_conf).read() == "*.*.qsl_rng_seed = 1\n"
    assert os.path.isfile(src.checker) and os.path.isdir(src.llama2_dir)
    assert sorted(os.listdir(tmp_path / "out")) == ["inference"]          # no temp folder left


def test_clone_of_a_missing_tag_fails_clearly_and_leaves_nothing(tmp_path, inference_repo):
    with pytest.raises(InferenceSrcError, match="v9.9"):
        clone_at_tag(f"file://{inference_repo}", "v9.9", str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out") and os.listdir(tmp_path) == ["inference"]


def test_describe_a_given_checkout(tmp_path, inference_repo):
    src = describe(str(inference_repo))
    assert src.tag == "v5.1"
    with pytest.raises(InferenceSrcError, match="no such folder"):
        describe(str(tmp_path / "nope"))
    with pytest.raises(InferenceSrcError, match="submission_checker.py .or tools/submission/submission_checker/main.py. missing"):
        describe(str(tmp_path))


def test_an_override_that_clones_is_used(tmp_path, inference_repo):
    _git(inference_repo, "branch", "vllm", "v5.0")
    official = f"file://{tmp_path / 'official-not-there'}"
    got = get_source(f"file://{inference_repo}", "vllm", str(tmp_path / "out" / "inference"),
                     src_path=str(inference_repo), official_url=official, round_tag="v5.1")
    assert got.source.path == str(tmp_path / "out" / "inference") and not got.fallback
    assert open(got.source.mlperf_conf).read() == "*.*.qsl_rng_seed = 1\n"   # the branch, not src_path
    assert got.notes == (f"using file://{inference_repo} at vllm, as the override asks",)


def test_an_override_that_cannot_be_cloned_falls_back_to_the_checkout_given_and_says_so(tmp_path, inference_repo):
    fork = f"file://{tmp_path / 'no-such-fork'}"
    got = get_source(fork, "vllm", str(tmp_path / "out" / "inference"), src_path=str(inference_repo),
                     official_url=f"file://{inference_repo}", round_tag="v5.1")
    assert got.fallback and got.source.path == str(inference_repo) and got.source.tag == "v5.1"
    assert len(got.notes) == 1 and got.notes[0].startswith(f"the override {fork} at vllm could not be cloned")
    assert got.notes[0].endswith(f"continuing without it, with the checkout given, {inference_repo}")
    assert not os.path.exists(tmp_path / "out" / "inference")               # nothing half-cloned left
    assert not os.path.exists(tmp_path / "out") or os.listdir(tmp_path / "out") == []


def test_an_override_that_cannot_be_cloned_falls_back_to_the_official_repository(tmp_path, inference_repo):
    got = get_source(f"file://{tmp_path / 'no-such-fork'}", "v5.1", str(tmp_path / "out" / "inference"),
                     official_url=f"file://{inference_repo}", round_tag="v5.0")
    assert got.fallback and got.source.tag == "v5.0"
    assert f"continuing without it, with file://{inference_repo} at v5.0" in got.notes[0]


def test_no_override_uses_the_checkout_given_and_notes_another_tag(tmp_path, inference_repo):
    got = get_source(f"file://{inference_repo}", "v5.0", str(tmp_path / "out"), src_path=str(inference_repo),
                     official_url=f"file://{inference_repo}")
    assert not got.fallback and got.source.path == str(inference_repo)
    assert got.notes == (f"{inference_repo} is at v5.1, not v5.0",)
    assert not os.path.exists(tmp_path / "out")


def test_pip_install_byte_compiles_what_it_installed_in_parallel(tmp_path):
    """pip runs with --no-compile; what it installed (its --report) is then compiled by pyenv's own
    parallel step: every .py of the new distributions has its .pyc, as pip's own compile leaves it."""
    import importlib.util
    from mlperf_llm.sysinfo.pyenv import PackageRequest, create_venv, pip_install
    python = create_venv(sys.executable, str(tmp_path / "venv"))
    assert pip_install(python, PackageRequest("six", version_min="1.10"))
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    source = site / "six.py"
    assert source.is_file() and os.path.isfile(importlib.util.cache_from_source(str(source)))


def test_an_install_writes_the_venv_s_lock_with_the_archive_s_hash_and_the_system_python_gets_none(tmp_path):
    """envlock.py: pip's report of the install merged into the venv's lock file (in the venv's folder:
    its cache entry); the whole lock lists every distribution, the ones this project did not install
    (pip of `python -m venv`) without a hash and saying why; an interpreter that is not a venv of
    ours is never written into."""
    import hashlib
    import json
    from mlperf_llm.sysinfo import envlock
    from mlperf_llm.sysinfo.pyenv import PackageRequest, create_venv, pip_install
    python = create_venv(sys.executable, str(tmp_path / "venv"))
    pip_install(python, PackageRequest("six", version_min="1.10"))
    lock = json.loads((tmp_path / "venv" / envlock.LOCK_NAME).read_text())
    (six,) = [d for d in lock["distributions"] if d["name"] == "six"]
    assert len(six["sha256"]) == 64 and six["version"]
    if six["url"].startswith("file://"):                  # an archive on this disk: its hash is that file's
        with open(six["url"][len("file://"):], "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == six["sha256"]
    whole = {d.name: d for d in envlock.read(python)}
    assert whole["six"].sha256 == six["sha256"] and whole["pip"].sha256 == "" and whole["pip"].note == envlock.NO_HASH
    text = envlock.requirements(list(whole.values()))
    assert f"six=={six['version']} --hash=sha256:{six['sha256']}\n" in text and "# pip==" in text
    assert envlock.venv_dir_of(sys.executable) is None or os.path.isfile(
        os.path.join(envlock.venv_dir_of(sys.executable), "cm-venv-complete"))
