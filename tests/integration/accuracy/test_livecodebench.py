"""accuracy/livecodebench.py: programs against a problem's tests, in the sandbox (real processes)."""
import base64
import json
import pickle
import zlib

import pytest

from mlperf_llm.accuracy.livecodebench import Test, decode_tests, run_tests, same_output

ADD = [Test("1 2\n", "3\n"), Test("10 -4\n", "6\n"), Test("0 0\n", "0")]
SUM_IT = "a, b = map(int, input().split())\nprint(a + b)\n"
TWO_SUM = [Test("[2, 7, 11, 15]\n9", "[0, 1]", "functional"), Test("[3, 3]\n6", "[0, 1]", "functional")]
FUNCTIONAL = """class Solution:
    def twoSum(self, nums, target):
        seen = {}
        for i, n in enumerate(nums):
            if target - n in seen:
                return [seen[target - n], i]
            seen[n] = i
"""


def test_a_right_program_passes_and_a_wrong_one_fails_naming_the_test():
    assert run_tests(SUM_IT, ADD, per_test_s=3).passed
    wrong = run_tests("a, b = map(int, input().split())\nprint(a - b)\n", ADD, per_test_s=3)
    assert not wrong.passed and wrong.why == "test 1 of 3: wrong output"


def test_functional_tests_call_the_solution_method():
    assert run_tests(FUNCTIONAL, TWO_SUM, fn_name="twoSum", per_test_s=3).passed
    assert not run_tests(FUNCTIONAL.replace("[seen[target - n], i]", "[i, i]"), TWO_SUM, fn_name="twoSum",
                         per_test_s=3).passed


@pytest.mark.parametrize("program, words", [
    ("while True:\n    pass\n", "test 1 of 3: timeout"),
    ("import os\nos.fork()\n", "tried os.fork"),
    ("import socket\nsocket.socket()\n", "tried socket"),
    ("x = [0] * (1 << 34)\n", "test 1 of 3: error: MemoryError"),
    ("import sys\nsys.__stdout__.write('[[\"ok\", \"3\\\\n\", \"null\"]]' * 2)\n", "wrong output"),
    (None, "no program"),
])
def test_a_hostile_or_runaway_program_fails_with_its_reason(program, words):
    v = run_tests(program, ADD, per_test_s=1)
    assert not v.passed and words in v.why, v.why


def test_output_compares_by_lines_and_numbers():
    assert same_output("3 \n4\n", "3\n4")
    assert same_output("1.50 2\n", "1.5 2")
    assert not same_output("3\n", "3\n4") and not same_output("x", "y")


def test_private_tests_are_read_without_unpickling_objects():
    tests = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    packed = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()
    assert decode_tests(packed) == [Test("1\n", "2\n", "stdin")]
    assert decode_tests(json.dumps(tests)) == [Test("1\n", "2\n", "stdin")]

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    hostile = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    with pytest.raises(pickle.UnpicklingError, match="builtins.print: not plain data"):
        decode_tests(hostile)
