"""service._start_together: replicas started at once, each waited for in a thread; one that fails, or
an interrupt of the run, stops every replica that started (up or still starting) and ends the threads."""
import threading
import time

import pytest

from mlperf_llm.vllm import service


class Replica:
    """A replica's start: it says it started (note, as _start_ready's on_start does), then waits until
    it answers (`ready`) or is stopped (`stopped`: what stop_record does to its process)."""

    def __init__(self, i: int, fails: bool = False, ready: bool = True):
        self.i, self.fails = i, fails
        self.ready, self.stopped, self.began = threading.Event(), threading.Event(), threading.Event()
        if ready:
            self.ready.set()

    def __call__(self, opts, folder, note):
        note(self)
        self.began.set()
        if self.fails:
            raise RuntimeError(f"replica {self.i}: port taken")
        deadline = time.monotonic() + 10        # a regression that stops nothing fails, not hangs
        while not (self.ready.is_set() or self.stopped.is_set()) and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.stopped.is_set():
            raise RuntimeError(f"replica {self.i} exited")      # as wait_ready's EarlyExitError
        return f"replica {self.i} up"


@pytest.fixture
def stops(monkeypatch):
    stopped = []

    def stop_record(record, env):
        stopped.append(record.i)
        record.stopped.set()
        return f"server of replica {record.i} stopped"
    monkeypatch.setattr(service, "stop_record", stop_record)
    monkeypatch.setattr(service.server, "stop", lambda record: stop_record(record, {}))
    return stopped


def test_all_up_in_order_nothing_stopped(stops):
    said = []
    out = service._start_together([Replica(1), Replica(2)], None, None, {}, said.append)
    assert out == ["replica 1 up", "replica 2 up"] and stops == [] and said == []


def test_one_that_fails_stops_the_one_still_starting_not_itself(stops):
    slow = Replica(1, ready=False)
    said = []
    with pytest.raises(RuntimeError, match="replica 2: port taken"):
        service._start_together([slow, Replica(2, fails=True)], None, None, {}, said.append)
    assert stops == [1] and said == ["server of replica 1 stopped"]
    assert not [t for t in threading.enumerate() if t.name.startswith("vllm-replica")]


def test_an_interrupt_stops_every_replica_that_started(stops, monkeypatch):
    """Ctrl-C or SIGTERM (raised as a KeyboardInterrupt in the thread that waits: cmengine/interrupt.py)
    while both replicas are starting. The signal itself is not sent: under pytest-xdist the test does
    not run in the main thread, where Python runs signal handlers."""
    replicas = [Replica(1, ready=False), Replica(2, ready=False)]

    def interrupted(futures, return_when):
        for r in replicas:
            r.began.wait(10)
        raise KeyboardInterrupt
    monkeypatch.setattr(service, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        service._start_together(replicas, None, None, {}, lambda line: None)
    assert sorted(stops) == [1, 2]
    assert not [t for t in threading.enumerate() if t.name.startswith("vllm-replica")]
