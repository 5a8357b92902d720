"""--stand_in=embedded on a published folder (reproduce.replay.rehearse): the one command it runs for the
folder's benchmark, round and scenarios, and reproduction.json with every published figure listed and
marked not comparable. The chain is a callable here that leaves a fixture results folder (the real
chain runs in tests/e2e and by hand: docs/reproduce.md)."""
import json
import shutil
from pathlib import Path

from mlperf_llm.published.reader import read_published
from mlperf_llm.reproduce.replay import Options, rehearse, stand_in_request

ROOT = Path(__file__).resolve().parents[3]
PUBLISHED = ROOT.parent / "shared" / "published-results"
RESULTS = ROOT / "tests" / "fixtures" / "submission" / "results-v5.1"


def options(tmp_path, folder):
    return Options(source=str(PUBLISHED / folder), results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path / "w"),
                   stand_in="embedded")


def test_the_request_follows_the_folders_benchmark_round_and_scenarios(tmp_path):
    for folder, tags, scenarios in (("nm-v4.1-fp8", "_r4.1", "Server"),
                                    ("vultr-v5.1-mi325x", "_r5.1", "Interactive,Offline,Server")):
        opts = options(tmp_path, folder)
        request, notes = stand_in_request(read_published(opts.source), opts)
        assert request["tags"] == f"run-mlperf,inference,_full,_embedded,{tags}"
        assert (request["model"], request["scenario"], request["division"], request["execution_mode"]) == \
            ("llama2-70b-99", scenarios, "open", "test")
        assert request["results_dir"] == str(tmp_path / "rep" / "results")
        assert "none is comparable" in notes[0]


def test_the_rehearsal_lists_every_published_figure_as_not_comparable(tmp_path, capsys):
    asked = []

    def chain(request):
        asked.append(request)
        shutil.copytree(RESULTS, request["results_dir"])
        return {"return": 0}

    c = rehearse(options(tmp_path, "vultr-v5.1-mi325x"), chain)
    assert len(asked) == 1 and c.accuracy_equal is None and not c.comparable
    report = json.loads((tmp_path / "rep" / "reproduction.json").read_text())
    assert report["comparable"] is False and report["stand_in"] == "embedded" and report["accuracy_equal"] is None
    published = {(t["scenario"], t["mode"]) for t in report["tests"] if t["recorded"] is not None}
    assert {("Offline", "performance"), ("Server", "performance"), ("Interactive", "performance"),
            ("Offline", "accuracy")} <= published
    out = capsys.readouterr().out
    assert "NOT COMPARABLE (a stand-in ran)" in out and "Nothing above is comparable" in out
    assert "DIFFERS" not in out and "equal" not in out.split("Nothing above")[0]    # no verdicts, no ratios


def test_docker_as_asked_reaches_the_rehearsals_chain_and_an_image_archive_or_a_comparison_is_refused(tmp_path):
    """--docker on a folder without a record (here the stand-in's rehearsal; a README's command and
    another's plan go through the same as_asked): yes or chain goes to the chain's command, no drops
    one; --image_archive names no recorded image to check, and --compare_to runs nothing: both refused
    before anything runs."""
    import dataclasses

    import pytest

    from mlperf_llm.reproduce.replay import ReplayError, as_asked, compare_only
    asked = []

    def chain(request):
        asked.append(request)
        shutil.copytree(RESULTS, request["results_dir"])
        return {"return": 0}

    for n, docker in enumerate(("chain", "yes", "no", "")):
        opts = dataclasses.replace(options(tmp_path / str(n), "nm-v4.1-fp8"), docker=docker)
        rehearse(opts, chain)
        assert asked[-1].get("docker") == (docker if docker in ("chain", "yes") else None), docker
    assert as_asked({"docker": "yes", "model": "m"}, dataclasses.replace(options(tmp_path, "x"), docker="no"), "x") == \
        {"model": "m"}
    opts = dataclasses.replace(options(tmp_path / "a", "nm-v4.1-fp8"), docker="chain", image_archive="/img.tar")
    with pytest.raises(ReplayError, match=r"--image_archive=/img.tar: .* holds no reproduction record naming an image"):
        rehearse(opts, chain)
    opts = dataclasses.replace(options(tmp_path / "b", "nm-v4.1-fp8"), docker="chain", compare_to=str(RESULTS))
    with pytest.raises(ReplayError, match="--docker=chain with --compare_to=.*: a comparison runs nothing"):
        compare_only(opts)
    assert len(asked) == 4
