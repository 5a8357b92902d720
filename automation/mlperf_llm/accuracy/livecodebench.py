"""LiveCodeBench: a model's program against a problem's tests, in the sandbox (sandbox.py).

A problem's tests are LiveCodeBench's: each an input and the expected output, `stdin` (the program
reads the input, its printed output is compared line by line) or `functional` (the input is one JSON
value per line, the arguments of `Solution().<fn_name>(...)`, compared with the JSON of the output).
They come from the data set (the embedded set holds them in its rows; the real one from
LiveCodeBench's release file, fetched by the data step): nothing is fetched while scoring.

One sandboxed process per problem runs every test of it in turn (RUNNER, in the sandbox after the
guard), each under its own time limit; only the inputs go in, the expected outputs stay out here,
and the comparison is made out here. A program passes when every test passes; a hostile or runaway
one is stopped with the sandbox's verdict and fails. `decode_tests` reads LiveCodeBench's
compressed private tests without unpickling anything but plain data.
"""
from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from .sandbox import Limits, Outcome, run_program

PER_TEST_S = 6.0
RUNNER = r'''
import io, json, signal, sys
PER_TEST = float(open("per_test.txt").read())
solution = compile(open("solution.py").read(), "solution.py", "exec")
tests = json.load(open("tests.json"))
fn_name = open("fn_name.txt").read().strip()
class _Timeout(BaseException):
    pass
def _alarm(*_):
    raise _Timeout()
signal.signal(signal.SIGALRM, _alarm)
stdout, stdin = sys.stdout, sys.stdin
results = []
for given in tests:
    out = io.StringIO()
    sys.stdout, sys.stdin = out, io.StringIO(given)
    status, value = "ok", None
    signal.setitimer(signal.ITIMER_REAL, PER_TEST)
    try:
        scope = {"__name__": "__main__" if not fn_name else "solution"}
        exec(solution, scope)
        if fn_name:
            args = [json.loads(line) for line in given.split("\n") if line.strip()]
            value = getattr(scope["Solution"](), fn_name)(*args)
    except SystemExit:
        pass
    except _Timeout:
        status = "timeout"
    except BaseException as e:
        status = "error: " + type(e).__name__ + ": " + str(e)[:200]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stdin = stdout, stdin
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError):
        shown = json.dumps(repr(value))
    results.append([status, out.getvalue()[:1 << 16], shown])
    if status != "ok":
        break
print("\n" + json.dumps(results))
'''


@dataclass(frozen=True)
class Test:
    __test__ = False                    # a test case, not a pytest class
    given: str
    expected: str
    kind: str = "stdin"                 # stdin | functional

    @classmethod
    def from_json(cls, item: dict) -> "Test":
        """One test as LiveCodeBench (and the embedded set) writes it: input, output, testtype."""
        return cls(str(item["input"]), str(item["output"]), str(item.get("testtype", "stdin")))


@dataclass(frozen=True)
class Verdict:
    passed: bool
    why: str                            # '' when passed; the first failing test and how
    outcome: Outcome


class _PlainData(pickle.Unpickler):
    def find_class(self, module, name):          # no class, no function: strings, numbers, lists only
        raise pickle.UnpicklingError(f"{module}.{name}: not plain data")


def decode_tests(text: str) -> list[Test]:
    """LiveCodeBench's test list: JSON, or (private tests) base64 of zlib of a pickled JSON string."""
    try:
        raw = json.loads(text)
    except ValueError:
        payload = _PlainData(io.BytesIO(zlib.decompress(base64.b64decode(text)))).load()
        raw = json.loads(payload)
    return [Test.from_json(t) for t in raw]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def same_output(got: str, expected: str) -> bool:
    """Printed output against the expected, line by line (spaces at the ends aside); numbers that
    differ only in how they are written (1.50 and 1.5) are equal."""
    a, b = _lines(got), _lines(expected)
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        xs, ys = x.split(), y.split()
        try:
            if len(xs) != len(ys) or any(Decimal(p) != Decimal(q) for p, q in zip(xs, ys)):
                return False
        except InvalidOperation:
            return False
    return True


def same_value(shown: str, expected: str) -> bool:
    try:
        got, want = json.loads(shown), json.loads(expected)
    except ValueError:
        return False
    return got == want or (isinstance(got, (list, tuple)) and list(got) == want)


def run_tests(program: str | None, tests: list[Test], fn_name: str = "", limits: Limits | None = None,
              per_test_s: float = PER_TEST_S) -> Verdict:
    """Whether `program` passes every test (no program: failed)."""
    if not program:
        return Verdict(False, "no program in the answer", Outcome("error", "", "", None, 0.0, "no program"))
    limits = limits or Limits(wall_s=per_test_s * len(tests) + 5, cpu_s=int(per_test_s * len(tests)) + 3)
    files = {"solution.py": program, "tests.json": json.dumps([t.given for t in tests]),
             "fn_name.txt": fn_name, "per_test.txt": str(per_test_s)}
    outcome = run_program(RUNNER, "", limits, files)
    if not outcome.ok:
        return Verdict(False, f"the program was stopped: {outcome.why}", outcome)
    try:
        results = json.loads(outcome.stdout.rstrip().rsplit("\n", 1)[-1])
    except ValueError:
        return Verdict(False, "its results could not be read (it wrote past its output)", outcome)
    for i, test in enumerate(tests):
        if i >= len(results):
            return Verdict(False, f"test {i + 1} of {len(tests)} did not run", outcome)
        status, printed, shown = results[i]
        if status != "ok":
            return Verdict(False, f"test {i + 1} of {len(tests)}: {status}", outcome)
        right = same_value(shown, test.expected) if fn_name else same_output(printed, test.expected)
        if not right:
            return Verdict(False, f"test {i + 1} of {len(tests)}: wrong output", outcome)
    return Verdict(True, "", outcome)
