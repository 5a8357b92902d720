"""LoadGen really built from the v4.1 source (../shared/mlcommons-inference/v4.1) into a temporary
folder, as get-mlperf-inference-loadgen `_test06` builds it where v4.1's wheels cannot run TEST06;
then TEST06 runs with it: a tiny LoadGen run with an in-process SUT, and the harness against the
stand-in server. The build logs the samples audit.config asks for (the 4.1.x wheels log none) and
reads v4.1's mlperf.conf beside it. Compiles C++ (about a minute on 2 idle cores); pip fetches the build
requirements (pybind11) that the source's pyproject.toml names. The build goes through the store of
finished builds (loadgen_src.build_kept) in the session's cache where CI gives one
(CM4MLPERF_CACHE_DIR): this module runs first (tests/conftest.py: FIRST), and seed 003's e2e run
copies the build from there; elsewhere the store is a temporary folder."""
import json
import os
import subprocess
import sys

import pytest

from inference_sources import inference_source
from mlperf_llm.accuracy.process import Test06Request as Request06, verify_test06
from mlperf_llm.accuracy.test06 import verify
from mlperf_llm.accuracy.test06_config import audit_config, settings_of
from mlperf_llm.harness.driver import HarnessRequest, run_all
from mlperf_llm.harness.results import detail_errors, detail_values
from mlperf_llm.rounds import get_round
from standin import StandinConfig, StandinProcess
from standin import toytok
from standin.dataset import write_dataset
from mlperf_llm.sysinfo.loadgen_conf import CONF_BESIDE
from mlperf_llm.sysinfo.loadgen_src import build_for_round, for_test06, keep_build, missing_tools, read_source
from mlperf_llm.sysinfo.pyenv import with_path

V41 = get_round("4.1")
AUTOMATION = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "automation")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    missing = missing_tools(sys.executable)
    if missing:
        pytest.skip("this machine cannot build a C++ extension: " + "; ".join(missing))
    source = read_source(inference_source("4.1"))
    cache = os.environ.get("CM4MLPERF_CACHE_DIR", "").strip()
    store = os.path.join(cache, "builds") if cache else str(tmp_path_factory.mktemp("builds"))
    site = str(tmp_path_factory.mktemp("cache") / "site-src")
    return source, build_for_round(sys.executable, source, site, V41, store=store, say=print), store


def test_the_build_is_v41s_loadgen_with_v41s_mlperf_conf_beside_it(built):
    source, lg, _ = built
    assert lg.version == "4.1" and lg.qsl_rng_seed == V41.qsl_rng_seed
    assert lg.conf == os.path.join(lg.site, CONF_BESIDE)
    assert open(lg.conf).read() == open(source.mlperf_conf).read()
    assert [n for n in os.listdir(lg.site) if n.startswith("mlperf_loadgen") and n.endswith(".so")]
    assert not os.path.exists(lg.site + ".src") and not os.path.exists(lg.site + ".tmp")


def test_where_no_compiler_is_the_hosts_build_is_copied_and_checked_as_built_here(built, tmp_path, monkeypatch):
    """--docker=chain's image has no compiler: the get step there is handed the build the host kept
    (loadgen_src.build_on_host, by keep_build) and copies it, checked as a build made there (the round's
    seed, with v4.1's mlperf.conf beside it); without it, the missing compiler is named. Here the
    compiler is made missing by CXX naming none."""
    source, lg, store = built
    kept, found = keep_build(sys.executable, source, store)
    assert found and os.path.basename(kept).startswith(f"loadgen-{source.digest[:16]}-cpython-")
    monkeypatch.setenv("CXX", str(tmp_path / "no-compiler" / "c++"))
    wheel = "4.1.30"
    assert "no C++ compiler" in for_test06(wheel, inference_source("4.1"), sys.executable).problem
    choice = for_test06(wheel, inference_source("4.1"), sys.executable, given=kept)
    assert choice.problem == "" and choice.source.digest == source.digest
    said = []
    copied = build_for_round(sys.executable, choice.source, str(tmp_path / "entry" / "site-src"), V41,
                             store=str(tmp_path / "image-builds"), say=said.append, given=kept)
    assert (copied.version, copied.qsl_rng_seed) == (lg.version, V41.qsl_rng_seed) and copied.conf
    assert f"built on the host: copied from {kept}" in said[0] and not os.path.exists(tmp_path / "image-builds")


# One Offline test in its own process (the built module first on PYTHONPATH), as the harness runs
# it: v4.1's mlperf.conf beside the module first, then user.conf; TEST06's audit.config in the cwd.
TINY_RUN = r"""
import array, os, sys
import mlperf_loadgen as lg
from mlperf_llm.sysinfo.loadgen_conf import conf_beside_loadgen

conf = conf_beside_loadgen()
assert conf, "the harness would not find the mlperf.conf beside the built LoadGen"
os.chdir(sys.argv[1])
s = lg.TestSettings()
s.scenario = lg.TestScenario.Offline
s.FromConfig(conf, "llama2-70b", "Offline")
s.FromConfig("user.conf", "llama2-70b", "Offline")
s.mode = lg.TestMode.AccuracyOnly          # the harness's TEST06 mode; audit.config makes it a performance run
keep = []

def issue(queries):
    done = []
    for q in queries:
        buf = array.array("i", [7 + q.index % 5, 8, 2])     # three tokens, the last one EOS
        keep.append(buf)
        ptr, n = buf.buffer_info()
        done.append(lg.QuerySampleResponse(q.id, ptr, n * 4, n))
    lg.QuerySamplesComplete(done)

sut = lg.ConstructSUT(issue, lambda: None)
qsl = lg.ConstructQSL(200, 200, lambda samples: None, lambda samples: None)
out = lg.LogOutputSettings()
out.outdir = sys.argv[1]
log = lg.LogSettings()
log.log_output = out
lg.StartTestWithLogSettings(sut, qsl, s, log, "audit.config")
lg.DestroyQSL(qsl)
lg.DestroySUT(sut)
"""


def test_a_tiny_test06_run_logs_the_samples_audit_config_asks_for(built, tmp_path):
    _, lg, _ = built
    audit_config("", str(tmp_path), V41)
    (tmp_path / "user.conf").write_text("llama2-70b.Offline.target_qps = 1000\n"
                                        "llama2-70b.*.performance_sample_count_override = 200\n")
    r = subprocess.run([sys.executable, "-c", TINY_RUN, str(tmp_path)], capture_output=True, text=True,
                       timeout=300, env=with_path(os.pathsep.join([lg.site, AUTOMATION])))
    assert r.returncode == 0, r.stderr[-3000:]
    detail = (tmp_path / "mlperf_log_detail.txt").read_text()
    values, settings = detail_values(detail), dict(settings_of(V41).settings)
    assert values["effective_accuracy_log_sampling_target"] == int(settings["*.*.accuracy_log_sampling_target"])
    assert values["effective_accuracy_log_rng_seed"] == int(settings["*.*.accuracy_log_rng_seed"])
    assert values["effective_qsl_rng_seed"] == V41.qsl_rng_seed         # v4.1's mlperf.conf was read
    assert values["loadgen_version"].startswith("4.1 ") and not detail_errors(detail)
    logged = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert len(logged) >= 50          # audit.config: 100 samples, a sampling target of 100; 4.1.x wheels log 0
    result = verify(str(tmp_path / "mlperf_log_accuracy.json"), "Offline")
    assert result.passed and result.samples == len(logged)


@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_the_harness_runs_test06_with_the_build_and_it_verifies(built, tmp_path, scenario):
    _, lg, _ = built
    dataset = write_dataset(str(tmp_path / "ds.pkl"), 24)
    audit, _ = audit_config(inference_source("4.1"), str(tmp_path / "audit"), V41)
    with StandinProcess(StandinConfig(output_tokens=6)) as sp:
        [out] = run_all(HarnessRequest(model="llama2-70b-99", results_dir=str(tmp_path / "results"), dataset_path=dataset,
                                       api_servers=(sp.url,), api_model_name="standin-model", round="4.1",
                                       test_query_count=24, progress=False, scenarios=(scenario,),
                                       modes=("TEST06",), audit_conf=audit, server_target_qps=50,
                                       loadgen_path=lg.site))
    assert out.returncode == 0 and out.verdict != "FAILED", out.reasons
    detail = (tmp_path / "results" / "llama2-70b-99" / scenario / "TEST06" / "mlperf_log_detail.txt").read_text()
    assert detail_values(detail)["effective_qsl_rng_seed"] == V41.qsl_rng_seed and not detail_errors(detail)
    [verdict] = verify_test06(Request06(str(tmp_path / "results"), "llama2-70b-99", [scenario],
                                            eos_token_id=toytok.EOS_ID, round="4.1"))
    assert verdict.result.passed and verdict.result.samples > 0, verdict.result.problems
