"""Each test's size kept and given back (harness/testsizes.py): the --test_sizes form, the folder's
record of what ran, and a request given sizes running each test at its size, unsized."""

import pytest

from mlperf_llm.harness import testsizes
from mlperf_llm.harness.cmenv import request_from_env
from mlperf_llm.harness.request import HarnessInputError, HarnessRequest
from mlperf_llm.harness.testsizing import size_test as _size_test

SIZES = {"Offline/performance": 12, "Offline/accuracy": 9, "Server/performance": 3, "Server/accuracy": 3,
         "Offline/TEST06": 5, "Server/TEST06": 4}


def test_the_input_form_round_trips_in_scenario_then_kind_order():
    text = testsizes.format_sizes(SIZES)
    assert text == ("Offline/performance=12,Offline/accuracy=9,Offline/TEST06=5,"
                    "Server/performance=3,Server/accuracy=3,Server/TEST06=4")
    assert testsizes.parse(text) == SIZES
    assert testsizes.parse("") == {} and testsizes.parse(" Offline/accuracy=9 ; ") == {"Offline/accuracy": 9}


@pytest.mark.parametrize("bad, said", [
    ("Offline=9", "'Offline=9' is not SCENARIO/KIND=N"),
    ("Offlin/accuracy=9", "'Offlin/accuracy=9' is not SCENARIO/KIND=N"),
    ("Offline/acc=9", "KIND one of performance, accuracy, TEST06"),
    ("Offline/accuracy=0", "at least 1"),
    ("Offline/accuracy=nine", "a whole number of queries"),
    ("Offline/accuracy", "is not SCENARIO/KIND=N"),
])
def test_a_malformed_entry_is_named_with_the_form_it_needs(bad, said):
    with pytest.raises(testsizes.TestSizesError, match="--test_sizes") as e:
        testsizes.parse(bad)
    assert said in str(e.value)


def test_the_folders_record_adds_a_test06_run_and_forgets_what_a_valid_run_replaced(tmp_path):
    testsizes.write(str(tmp_path), {"Offline/performance": 12, "Offline/accuracy": 9})
    testsizes.write(str(tmp_path), {"Offline/TEST06": 5})
    assert testsizes.read(str(tmp_path)) == {"Offline/performance": 12, "Offline/accuracy": 9, "Offline/TEST06": 5}
    testsizes.write(str(tmp_path), {}, forget=("Offline/accuracy",))
    assert testsizes.read(str(tmp_path)) == {"Offline/performance": 12, "Offline/TEST06": 5}
    assert testsizes.read(str(tmp_path / "nowhere")) == {}


@pytest.mark.parametrize("content", ["[1, 2]", "{\"Offline/accuracy\": \"x\"}", "not json"])
def test_an_unreadable_record_names_the_file_and_the_fix(tmp_path, content):
    (tmp_path / testsizes.SIZES_FILE).write_text(content)
    with pytest.raises(testsizes.TestSizesError, match="fix: delete it") as e:
        testsizes.read(str(tmp_path))
    assert str(tmp_path / testsizes.SIZES_FILE) in str(e.value)


def _req(tmp_path, **kw):
    base = dict(model="llama2-70b-99", results_dir=str(tmp_path), dataset_path="x.pkl", api_servers=("http://x",),
                test_query_count=32, size_to_host=True)
    return HarnessRequest(**{**base, **kw})


def test_a_given_size_runs_the_test_at_it_and_nothing_is_sized(tmp_path):
    req = _req(tmp_path, test_sizes=SIZES)
    assert not req.sized_run
    for (scenario, mode), n in {("Offline", "performance"): 12, ("Offline", "accuracy"): 9,
                                ("Server", "performance"): 3}.items():
        treq, sized = _size_test(req, scenario, mode, 211, None)
        assert treq.test_query_count == n and sized.queries == n and sized.expected_s is None
        assert "given by --test_sizes" in sized.line(scenario, mode)
    assert _size_test(req, "Offline", "accuracy", 211, None)[0].accuracy_rows(211) == 9
    # a test the sizes do not list runs as asked (test_query_count), unsized
    treq, sized = _size_test(_req(tmp_path, test_sizes={"Offline/accuracy": 9}), "Server", "performance", 211, None)
    assert treq.test_query_count == 32 and sized is None


def test_sizes_are_for_test_runs_only(tmp_path):
    with pytest.raises(HarnessInputError, match="a valid run's sizes are the round's"):
        _req(tmp_path, test_sizes=SIZES, execution_mode="valid").validate()


def test_the_env_contract_reads_them_and_names_a_bad_one(tmp_path):
    env = {"CM_MLPERF_MODEL": "llama2-70b-99", "CM_DATASET_PREPROCESSED_PATH": "x.pkl",
           "CM_MLPERF_API_SERVER": "http://x", "CM_MLPERF_TEST_SIZES": testsizes.format_sizes(SIZES)}
    assert request_from_env(env, str(tmp_path)).test_sizes == SIZES
    with pytest.raises(HarnessInputError, match="Offline/acc=9"):
        request_from_env({**env, "CM_MLPERF_TEST_SIZES": "Offline/acc=9"}, str(tmp_path))


def test_a_run_without_an_offline_performance_test_says_which_tests_it_runs_and_why_they_are_not_sized(tmp_path,
                                                                                                     capsys):
    """A _find-performance Server run printed 'it has no Offline performance test' right after its
    search had measured Offline: the line now names the run's own tests and says the search's probe
    does not size them."""
    from mlperf_llm.harness.request import HarnessRequest
    from mlperf_llm.harness.testsizing import start_sizing
    req = HarnessRequest(model="llama2-70b-99.9", results_dir=str(tmp_path), dataset_path="ds.pkl",
                         scenarios=("Server",), modes=("performance",), size_to_host=True)
    assert start_sizing(req) is None
    out = capsys.readouterr().out
    assert "its tests (Server; performance) hold no Offline performance test of their own" in out
    assert "a target search's Offline probe does not size them" in out
