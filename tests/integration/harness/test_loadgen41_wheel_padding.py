"""Round v4.1's LoadGen wheel (4.1.30, the round's pin, pip-installed into a temporary folder as
get-mlperf-inference-loadgen installs it) pads each performance test of llama2-70b to a multiple of
its performance sample count whatever user.conf's sample_concatenate_permutation says. A test run of
the harness on it, against the stand-in server, still issues exactly the queries it asked for."""
import sys
from pathlib import Path

import pytest

from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.results import HarnessStatus, detail_values
from mlperf_llm.rounds import get_round
from mlperf_llm.sysinfo.pyenv import PackageRequest, pip_install_into
from standin import StandinConfig, StandinProcess
from standin.dataset import write_dataset

ROWS, QUERIES = 24, 4
V41 = get_round("4.1")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    site = str(tmp_path_factory.mktemp("lg41") / "site")
    version = pip_install_into(sys.executable, PackageRequest("mlcommons-loadgen", V41.loadgen_pin), site)
    return site, version


@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_a_test_run_on_the_41_wheel_issues_what_it_asked(tmp_path, wheel, scenario):
    site, version = wheel
    assert version == V41.loadgen_pin
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    with StandinProcess(StandinConfig(output_tokens=3)) as sp:
        req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset, api_servers=(sp.url,),
                             api_model_name="standin-model", round="4.1", scenarios=(scenario,),
                             modes=("performance",), test_query_count=QUERIES, server_target_qps=50.0,
                             loadgen_path=site, loadgen_version=version, progress=False)
        (perf,) = run_all(req)
    assert perf.verdict != "FAILED", perf.reasons
    detail = detail_values(open(f"{perf.directory}/mlperf_log_detail.txt").read())
    assert detail["loadgen_version"].startswith("4.1")
    assert detail["requested_sample_concatenate_permutation"] is True      # the wheel's own doing
    assert detail["effective_performance_sample_count"] == QUERIES
    assert HarnessStatus.read(Path(perf.directory)).completed == QUERIES   # samples answered: not padded to 24
    user_conf = open(f"{perf.directory}/user.conf").read()
    assert f"llama2-70b.*.performance_sample_count_override = {QUERIES}" in user_conf


def test_without_the_version_the_same_run_pads_to_the_data_set(tmp_path, wheel):
    """What the rule is for: the version unknown, user.conf keeps the data set's rows and the wheel
    pads the 4 queries to 24."""
    site, _ = wheel
    dataset = write_dataset(str(tmp_path / "ds.pkl"), ROWS)
    with StandinProcess(StandinConfig(output_tokens=3)) as sp:
        req = HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset, api_servers=(sp.url,),
                             api_model_name="standin-model", round="4.1", scenarios=("Offline",),
                             modes=("performance",), test_query_count=QUERIES, loadgen_path=site, progress=False)
        (perf,) = run_all(req)
    assert "performance_sample_count_override = 24" in open(f"{perf.directory}/user.conf").read()
    assert HarnessStatus.read(Path(perf.directory)).completed == ROWS
