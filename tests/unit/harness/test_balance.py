"""Which endpoint takes the next request (harness/balance.py): least outstanding work across every
worker, a window per endpoint, round-robin to compare with."""
import asyncio
import threading

import pytest

from mlperf_llm.harness.balance import Balancer

A, B = "http://a", "http://b"


def test_least_takes_the_endpoint_with_the_fewest_requests_then_the_fewest_prompt_tokens():
    b = Balancer([A, B])
    assert b.try_acquire(100) == A and b.try_acquire(10) == B
    assert b.try_acquire(5) == B                 # 1 request each: B has fewer prompt tokens in flight
    b.release(A, 100, served=True)
    assert b.try_acquire(1) == A and b.in_flight() == {A: 1, B: 2}
    assert b.served() == {A: 1, B: 0}


def test_round_robin_takes_turns_whatever_is_in_flight():
    b = Balancer([A, B], "round-robin")
    assert [b.try_acquire() for _ in range(4)] == [A, B, A, B]
    b.release(A)
    b.release(A)
    assert b.try_acquire() == A and b.try_acquire() == B


def test_a_full_window_sends_the_next_request_to_the_endpoint_that_frees_a_slot():
    """A slow replica holds its window while the fast one takes the rest (the skewed case)."""
    b = Balancer([A, B], window=1)
    assert b.try_acquire() == A and b.try_acquire() == B and b.try_acquire() is None
    b.release(B, served=True)
    assert b.try_acquire() == B


def test_a_waiting_request_is_woken_by_a_release_on_another_workers_thread():
    b = Balancer([A], window=1)
    assert b.try_acquire() == A
    got = []

    async def wait_for_slot():
        got.append(await asyncio.wait_for(b.acquire(7), 10))

    t = threading.Thread(target=lambda: asyncio.run(wait_for_slot()))
    t.start()
    while not b._waiters:                         # the worker is waiting
        threading.Event().wait(0.01)
    b.release(A, served=True)                     # another worker's request ends
    t.join(10)
    assert got == [A] and b.in_flight() == {A: 1} and b.served() == {A: 1}


@pytest.mark.parametrize("kw, words", [({"policy": "random"}, "balance='random'"), ({"window": 0}, "at least 1"),
                                       ({"urls": []}, "no endpoint")])
def test_bad_settings_are_named(kw, words):
    with pytest.raises(ValueError, match=words):
        Balancer(**{"urls": [A], **kw})
