"""Scoring over a pool of worker processes gives the very numbers one process gives (the golden log)."""
import json

from mlperf_llm.accuracy.evaluate import evaluate


def test_two_worker_processes_give_the_recorded_numbers(golden):
    one = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=1)
    two = evaluate(golden["log"], golden["dataset"], golden["tokenizer"], workers=2)
    expected = {k: v for k, v in golden["expected"].items() if k != "sentence_splitter"}
    assert two.reference_dict() == one.reference_dict() == expected, json.dumps(two.reference_dict())


def test_a_finished_pool_ends_its_workers_without_a_signal(tmp_path):
    # under a run's signal handlers (cmengine.interrupt.raising), as the accuracy step scores:
    # `with Pool()` ended each map with SIGTERM to the workers, which printed an Interrupted
    # traceback per worker and, when a SIGTERM fell between a worker's fork and Python's after-fork
    # reset, left that worker waiting forever (a replay hung 20 minutes in CI, 2026-11-25)
    import subprocess
    import sys
    from pathlib import Path
    automation = Path(__file__).resolve().parents[3] / "automation"
    code = (f"import sys; sys.path.insert(0, {str(automation)!r})\n"
            "import multiprocessing\n"
            "from cmengine import interrupt\n"
            "from mlperf_llm.accuracy import scoring\n"
            "t = ['the cat sat on the mat. It was warm.'] * 4\n"
            "with interrupt.raising():\n"
            "    for _ in range(30):\n"
            "        scoring.score_pairs(t, t, workers=2)\n"
            "print('children left:', len(multiprocessing.active_children()))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "children left: 0" in r.stdout
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
