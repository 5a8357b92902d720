"""accuracy/math_equiv.py's grade_many: the same verdicts as grade, from one child process of its own
session that is gone when the call returns (a real child, real limits; a few pairs each)."""
import os
import subprocess

import pytest

from mlperf_llm.accuracy import math_equiv
from mlperf_llm.accuracy.math_equiv import grade, grade_many

PAIRS = [
    ("1,000", "1000"), ("2/4", "\\frac{1}{2}"), ("2\\sqrt{2}", "\\sqrt{8}"), ("(1, 2)", "(1,2)"),
    ("[0,1)", "(0,1)"), ("x^2+2x+1", "(x+1)^2"), (None, "5"), ("", "5"), ("eye(99999)", "\\frac{1}{3}"),
]
SLOW = ("(x+5)^7", "x^7+35x^6+525x^5+4375x^4+21875x^3+65625x^2+109375x+78125")   # equal, given time


@pytest.fixture
def children(monkeypatch):
    """The pids of the children grade_many starts (each its own session: pid = process group)."""
    started = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self.pid)

    monkeypatch.setattr(math_equiv.subprocess, "Popen", Recorded)
    return started


def gone(pid):
    """Neither the child nor anything in its process group is still there."""
    for probe in (os.kill, os.killpg):
        try:
            probe(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


def test_grade_many_gives_grades_verdicts(children):
    assert grade_many(PAIRS) == [grade(given, truth) for given, truth in PAIRS]
    assert len(children) == 1 and gone(children[0])


def test_no_pairs_start_no_child(children):
    assert grade_many([]) == [] and children == []


def test_a_pair_past_its_time_limit_is_unequal_and_the_rest_still_graded(children):
    got = grade_many([SLOW, ("1,000", "1000")], time_limit_s=0.001)
    assert not got[0].equal and "timed out" in got[0].why
    assert got[1] == math_equiv.EQUAL
    assert len(children) == 1 and gone(children[0])


def test_a_child_past_its_wall_clock_is_killed_and_its_pairs_unequal(children, monkeypatch):
    # a wall clock of 0.12 s: the child is still importing sympy (for its first pair) when it runs out
    monkeypatch.setattr(math_equiv, "WALL_SLACK_S", 0.1)
    got = grade_many([SLOW, ("1,000", "1000")], time_limit_s=0.01)
    assert got == [math_equiv.MathVerdict(False, "grader timed out")] * 2
    assert len(children) == 1 and gone(children[0])
