"""`--from=URL`: a folder of a results repository, fetched sparsely with real git from a local
repository (file://, the stand-in for github.com here) that holds the shared Neural Magic folder
beside a second system of the same submitter; the reproduce step plans it with --dry-run."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cmengine.registry import Repo
from enginefixtures import Runner
from mlperf_llm.published.fetch import FetchError, fetch, parse, patterns

ROOT = Path(__file__).resolve().parents[3]
NM = ROOT.parent / "shared" / "published-results" / "nm-v4.1-fp8"
SYSTEM = "4xH100-SXM-80GB_vLLM_FP8-reference-cpu-pytorch-v2.3.1-default_config"
OTHER = "8xH200-other-system"


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@t"))


@pytest.fixture(scope="module")
def results_repo(tmp_path_factory):
    """A results repository in the layout of inference_results_v4.1: open/NeuralMagic with the shared
    system and a second one (a copy under another name), one commit on main."""
    repo = tmp_path_factory.mktemp("inference_results_v4.1")
    shutil.copytree(NM / "open", repo / "open", symlinks=True)
    sub = repo / "open" / "NeuralMagic"
    for kind in ("results", "measurements"):
        shutil.copytree(sub / kind / SYSTEM, sub / kind / OTHER, symlinks=True)
    shutil.copy(sub / "systems" / f"{SYSTEM}.json", sub / "systems" / f"{OTHER}.json")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "v4.1 results", cwd=repo)
    return repo


def url(repo, path):
    return f"file://{repo}/tree/main/{path}"


def test_a_system_folder_brings_only_that_systems_files(results_repo, tmp_path):
    dest = fetch(url(results_repo, f"open/NeuralMagic/results/{SYSTEM}"), str(tmp_path / "fetched"))
    sub = Path(dest) / "open" / "NeuralMagic"
    assert (sub / "results" / SYSTEM).is_dir() and (sub / "measurements" / SYSTEM).is_dir()
    assert (sub / "systems" / f"{SYSTEM}.json").is_file() and (sub / "README.md").is_file()
    assert (sub / "code" / "llama2-70b-99").is_dir() and (sub / "model_mapping.json").is_file()
    assert not (sub / "results" / OTHER).exists() and not (sub / "systems" / f"{OTHER}.json").exists()
    assert not (Path(dest) / ".git").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["fetched"]            # no temporary folder left


def test_the_address_forms_and_their_refusals(results_repo, tmp_path):
    f = parse("https://github.com/mlcommons/inference_results_v4.1/tree/main/open/NeuralMagic/")
    assert (f.repo, f.ref, f.path) == ("https://github.com/mlcommons/inference_results_v4.1.git", "main",
                                       "open/NeuralMagic")
    assert patterns(f) == ["/open/NeuralMagic/"]
    with pytest.raises(FetchError, match="not a folder address.*tree/main"):
        parse("https://github.com/mlcommons/inference_results_v4.1")
    with pytest.raises(FetchError, match="not a submitter's folder"):
        patterns(parse("https://github.com/o/r/tree/main/docs"))
    with pytest.raises(FetchError, match="git clone failed.*no branch or tag of that name"):
        fetch(f"file://{results_repo}/tree/v9.9/open/NeuralMagic", str(tmp_path / "a"))
    with pytest.raises(FetchError, match="is not in"):
        fetch(url(results_repo, "open/NoSuchSubmitter"), str(tmp_path / "b"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []              # nothing half-fetched left


def test_dry_run_plans_a_folder_given_by_its_address(results_repo, tmp_path):
    runner = Runner([Repo("cm4mlperf-llm", str(ROOT))], str(tmp_path / "cache"), include_project=True)
    r = runner.plan("reproduce,mlperf,inference", **{"from": url(results_repo, f"open/NeuralMagic/results/{SYSTEM}"),
                                                     "results_dir": str(tmp_path / "rep")})
    assert r["return"] == 0, r.get("error")
    for words in ("round v4.1", "llama2-70b-99 Server", "target 5 QPS", "4x NVIDIA H100-SXM-80GB"):
        assert words in runner.output, (words, runner.output[-3000:])
    assert OTHER not in runner.output
