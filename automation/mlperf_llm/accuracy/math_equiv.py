"""MATH500 answer equivalence for deepseek-r1: is the model's boxed answer the ground truth?

The verdicts are meant to be those of the reference: mlcommons/inference's
language/deepseek-r1/eval_accuracy.py (evaluate_math500) calls OpenAI PRM800K's
`grading.grader.grade_answer(given, truth)` (openai/prm800k, commit 7ecc794, prm800k/grading/
grader.py and math_normalize.py). This module is our own implementation of the same rules, applied
in the same order:

1. **MATH (Hendrycks) normal form** (`mathd_normalize`): equal normal forms are equal answers;
2. **PRM800K normal form** (`prm_normalize`; LaTeX turned into text by pylatexenc): equal forms are
   equal answers; an empty answer is not;
3. **element by element**: a tuple or interval ("(1,2)", "[0,1)") is split at its commas, and its
   brackets must be the truth's; then per element: two plain fractions compare as written (2/4 is
   not 1/2); an integer never equals a non-integer; otherwise sympy decides whether
   `(truth) - (given)` simplifies to 0.

What we add: sympy's `parse_expr` runs Python's `eval`, and the answer is untrusted model output.
So before any sympy call the expression must be plain math (`refusal`): digits, ASCII and Greek
letters, whitespace and `+-*/^().` only, at most `MAX_SYMPY_CHARS` characters, at most 2 distinct
letters, no attribute access, no power towers, no number in base 2, 8 or 16, and no name of a sympy
function but `SAFE_FUNCTIONS` (sympy's `eye(99999)` builds a matrix of 10^10 entries). No comma or
square bracket either: Python would build a tuple or list, which `*` repeats in memory
(`(1,)99999999999`); an element of a tuple or interval is split off before sympy sees it. PRM800K's
own refusals (more than 2 letters, `^{`, `^(`, chained or multi-digit powers) are among these, so
refusing says "unequal" exactly where the reference says so; where the reference would evaluate
something we refuse (a `!`, `2^0b111`, a comma), we say unequal and why. sympy then parses with its
own names only: no Python builtins (`__import__`, `eval`, `open`) to reach. Time is bounded too:
`grade` stops the sympy step with SIGALRM (`time_limit_s`, on the main thread); `grade_many` grades
in one child process of its own session with memory and CPU limits (sandbox.py's), a per-pair alarm
inside and a wall clock outside.

sympy and pylatexenc are imported only when needed, so importing this module is cheap.
"""
from __future__ import annotations

import argparse
import functools
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tokenize
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .sandbox import Limits, _kill_group, _limit, _verdict

TIME_LIMIT_S = 5.0              # per pair, for the sympy step
MAX_SYMPY_CHARS = 200           # of "(truth)-(given)", beyond which sympy is not asked
MAX_POWER_NESTING = 4           # ((a^b)^c)^d...: deeper towers build huge integers in C, past any alarm
WALL_SLACK_S = 30.0             # grade_many's wall clock: pairs x time limit + this (the child's start)
AUTOMATION = Path(__file__).resolve().parents[2]        # the folder holding the mlperf_llm package


@dataclass(frozen=True)
class MathVerdict:
    equal: bool
    why: str = ""               # '' when equal; else why not, in a few words


EQUAL = MathVerdict(True)


# ---- 1. the MATH normal form (Hendrycks' math_equivalence, as math_normalize.py has it) -------

class _GiveUp(Exception):
    """A shape the MATH normaliser cannot handle; it then keeps the answer as it came."""


def _text_body(s: str) -> str | None:
    """What `\\text{...}` wraps when it wraps all of s (a newline may follow; none inside), else None."""
    end = len(s) - 1 if s.endswith("}\n") else len(s)
    if not s.startswith("\\text{") or not s[:end].endswith("}") or end - 1 <= len("\\text{"):
        return None
    body = s[len("\\text{"):end - 1]
    return None if "\n" in body else body


def _braced_sqrt(s: str) -> str:
    """\\sqrt3 -> \\sqrt{3}: one character after \\sqrt gets braces when it has none."""
    head, *parts = s.split("\\sqrt")
    out = [head]
    for part in parts:
        if not part:
            raise _GiveUp("\\sqrt with nothing after it")
        out.append("\\sqrt" + part if part[0] == "{" else "\\sqrt{" + part[0] + "}" + part[1:])
    return "".join(out)


def _braced_fracs(s: str) -> str:
    """\\frac12 -> \\frac{1}{2}, \\frac1{72} -> \\frac{1}{72}: the first one or two characters after
    \\frac get braces; a \\frac with a single character after it leaves s as it was."""
    head, *parts = s.split("\\frac")
    out = [head]
    for part in parts:
        if not part:
            raise _GiveUp("\\frac with nothing after it")
        if part[0] == "{":
            out.append("\\frac" + part)
            continue
        if len(part) < 2:
            return s
        num, den, rest = part[0], part[1], part[2:]
        out.append("\\frac{" + num + "}" + (den if den == "{" else "{" + den + "}") + rest)
    return "".join(out)


def _slash_to_frac(s: str) -> str:
    """'a/b' of two integers, written as Python writes them, -> \\frac{a}{b}."""
    parts = s.split("/")
    if len(parts) != 2:
        return s
    try:
        num, den = int(parts[0]), int(parts[1])
    except ValueError:
        return s
    return f"\\frac{{{num}}}{{{den}}}" if s == f"{num}/{den}" else s


def _mathd_strip(s: str) -> str:
    for old, new in (("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"),
                     ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", "")):
        s = s.replace(old, new)
    if "\\text{ " in s:                   # units on the right: "10 \text{ cm}"
        kept = s.split("\\text{ ")
        if len(kept) != 2:
            raise _GiveUp("more than one '\\text{ '")
        s = kept[0]
    s = s.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:   # "k = 5" -> " 5"
        s = sides[1]
    s = _braced_sqrt(s).replace(" ", "")
    s = _braced_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _slash_to_frac(s)


def mathd_normalize(answer: str | None) -> str | None:
    """The MATH data set's normal form of an answer (None stays None)."""
    if answer is None:
        return None
    answer = answer.strip()
    body = _text_body(answer)
    if body is not None:
        answer = body.strip()
    try:
        return _mathd_strip(answer)
    except _GiveUp:
        return answer


# ---- 2. the PRM800K normal form ----------------------------------------------------------------

# removed wherever they occur (as PRM800K does: "Monday" loses its "day"), in this order, with a
# plural ending and a power: "cm^2", "inches"
UNIT_WORDS = ("degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week",
              "month", "year", "foot", "feet", "inch", "yard")
_UNITS = [re.compile(word + r"(es)?(s)? *(\^[0-9]+)?") for word in UNIT_WORDS]
_SCALES = (("million", "*10^6"), ("billion", "*10^9"), ("trillion", "*10^12"))
_DEGREES = re.compile(r"\^ *\\circ")
_THIN_COMMA = re.compile(r",\\! *")                    # 1,\!000
_MINUS_SPACE = re.compile(r"- *")
_MIXED_NUMBER = re.compile(r"([0-9]) +([0-9])")        # 7 3/4 -> 7+3/4
_THOUSANDS = re.compile(r"(\d),(\d\d\d)($|\D)")        # 1,000 but not (1,2)
# optional minus, digits, one character at most, '/', a denominator not all zeros, one character at
# most ('.' is any character here, as in the reference)
_FRACTION = re.compile(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$")
# what pylatexenc writes for symbols sympy has names for
_SYMBOL_NAMES = (("√", "sqrt"), ("π", "pi"), ("∞", "inf"), ("∪", "U"), ("·", "*"), ("×", "*"))
BRACKETS = "()[]"


@functools.lru_cache(maxsize=1)
def _latex_converter():
    from pylatexenc.latex2text import LatexNodes2Text
    return LatexNodes2Text()


def _latex_to_text(expr: str) -> str:
    """LaTeX as plain text sympy can read: \\frac{a}{b} -> a/b, \\sqrt{2} -> sqrt(2), \\pi -> pi."""
    expr = expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac").replace("\\frac", " \\frac")
    text = _latex_converter().latex_to_text(expr)
    for symbol, name in _SYMBOL_NAMES:
        text = text.replace(symbol, name)
    return text.strip()


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _near_int(x: float) -> bool:
    try:
        return abs(x - int(round(x))) <= 1e-7
    except (OverflowError, ValueError):     # inf, nan
        return False


def _drop_thousands_commas(s: str) -> str:
    while True:
        dropped = _THOUSANDS.sub(r"\1\2\3", s)
        if dropped == s:
            return s
        s = dropped


def _is_integer(s: str) -> bool:
    """A number within 1e-7 of an integer, thousands commas allowed ("1,000", "3.00000001")."""
    value = _float(_drop_thousands_commas(s))
    return value is not None and _near_int(value)


def _as_integer(s: str) -> str:
    """The integer of an `_is_integer` string, truncated as the reference does: 2.99999999 -> 2."""
    return str(int(float(s.replace(",", ""))))


def prm_normalize(expr: str) -> str:
    """PRM800K's normal form: units, $ and % gone, LaTeX as text, no spaces or braces, lower case."""
    body = _text_body(expr)
    if body is not None:
        expr = body
    expr = expr.replace("\\%", "%").replace("\\$", "$").replace("$", "").replace("%", "")
    expr = expr.replace(" or ", " , ").replace(" and ", " , ")
    for word, power in _SCALES:
        expr = expr.replace(word, power)
    for unit in _UNITS:
        expr = unit.sub("", expr)
    expr = _DEGREES.sub("", expr)
    if expr and expr[0] == "{" and expr[-1] == "}":
        expr = expr[1:-1]
    expr = _THIN_COMMA.sub("", expr)
    value = _float(expr)
    if value is not None and _near_int(value):
        expr = str(int(round(value)))
    if "\\" in expr:
        try:
            expr = _latex_to_text(expr)
        except Exception:       # pylatexenc gives up on it: the LaTeX stays as it is
            pass
    expr = _MINUS_SPACE.sub("-", expr)
    expr = _MIXED_NUMBER.sub(r"\1+\2", expr)
    expr = expr.replace(" ", "").replace("{", "").replace("}", "").lower()
    return _as_integer(expr) if _is_integer(expr) else expr


def _elements(expr: str) -> list[str]:
    """A tuple's or interval's elements (outer brackets, no inner ones); else [expr]; [] for ''."""
    expr = _drop_thousands_commas(expr)
    if not expr:
        return []
    if len(expr) > 2 and expr[0] in BRACKETS and expr[-1] in BRACKETS \
            and not any(ch in BRACKETS for ch in expr[1:-1]):
        return [elem.strip() for elem in expr[1:-1].split(",")]
    return [expr]


# ---- 3. the sympy step, for plain math only ----------------------------------------------------

# Greek letters are what pylatexenc writes for \alpha, \theta...: Python names that no Unicode
# normalisation turns into ASCII ones (U+03A2 is unassigned)
GREEK = "".join(chr(c) for c in [*range(0x391, 0x3A2), *range(0x3A3, 0x3AA), *range(0x3B1, 0x3CA)])
_PLAIN = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" + GREEK + "+-*/^(). \t\n\r\f\v")
# sympy functions a MATH answer may use: one argument each, nothing they build can grow large
SAFE_FUNCTIONS = frozenset({"sqrt", "ln", "re", "im"})
_SEQUENCE = re.compile(r"[,\[\]]")                       # a Python tuple or list
_ATTRIBUTE = re.compile(r"\.[^\W\d]")                    # x.real, (1).__class__, x.α
_BASE_PREFIX = re.compile(r"(?<![\w.])0[xXbBoO]")        # 0b111, 0x7f, 0o17: Python reads them as integers
_CHAINED_POWER = re.compile(r"\^[-+]*[0-9]+\^")         # 9^9^9, 9^-9^9 (PRM800K's, signs added)
_LONG_EXPONENT = re.compile(r"\^[0-9][0-9]+")           # 2^100 (PRM800K's)
_LONG_SIGNED_EXPONENT = re.compile(r"\^[-+]+[0-9]{4,}")  # 2^-99999999 (ours: 2^{-10} stays allowed)


def _power_nesting(expr: str) -> int:
    """How deep powers of powers go: 2 for (a^2)^3, 1 for a^2+b^2."""
    stack, closed, deepest = [0], 0, 0
    for i, ch in enumerate(expr):
        if ch in "([":
            stack.append(0)
        elif ch in ")]":
            closed = stack.pop() if len(stack) > 1 else 0
        elif ch == "^":
            depth = 1 + (closed if i and expr[i - 1] in ")]" else 0)
            stack[-1] = max(stack[-1], depth)
            deepest = max(deepest, depth)
    return deepest


@functools.lru_cache(maxsize=1)
def _namespace() -> dict:
    """The names sympy's parser resolves, as parse_expr builds them by default (`from sympy import
    *`, max and min) but without Python's builtins: `eval` of the parsed text can reach no
    `__import__`, `open` or `getattr`. Copy it before passing it: eval adds to what it is given."""
    namespace: dict = {}
    exec("from sympy import *", namespace)
    namespace["max"], namespace["min"] = namespace["Max"], namespace["Min"]
    namespace["__builtins__"] = {}
    return namespace


def _unsafe_names(expr: str) -> list[str] | None:
    """The names in `expr`, read as sympy's parser reads them (Python's tokenizer, `^` as `**`),
    that sympy would resolve to a function or class of its own other than SAFE_FUNCTIONS (its
    constants, pi or E, are fine); None where the tokenizer cannot read `expr` (nor could sympy)."""
    basic = _sympy()[0].Basic
    namespace = _namespace()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(expr.replace("^", "**").strip()).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return sorted({tok.string for tok in tokens if tok.type == tokenize.NAME and tok.string in namespace
                   and tok.string not in SAFE_FUNCTIONS and not isinstance(namespace[tok.string], basic)})


def refusal(expr: str) -> str:
    """Why sympy may not see `expr` ('' when it may): anything but plain math is refused, as are
    PRM800K's own refusals (more than 2 unknown letters, `^{`, `^(`, chained or multi-digit powers).
    The last check, of names, imports sympy."""
    if len(expr) > MAX_SYMPY_CHARS:
        return f"longer than {MAX_SYMPY_CHARS} characters"
    if _SEQUENCE.search(expr):
        return "a comma or square bracket: Python would build a tuple or list"
    odd = sorted({ch for ch in expr if ch not in _PLAIN})
    if odd:
        return "character " + ", ".join(repr(ch) for ch in odd[:3])
    compact = re.sub(r"\s", "", expr).replace("**", "^")      # the checks below see through spaces
    if _ATTRIBUTE.search(compact):
        return "attribute access"
    if _BASE_PREFIX.search(expr):
        return "a number in base 2, 8 or 16"
    letters = {ch for ch in expr.replace("sqrt", "").replace("frac", "") if ch.isalpha()}
    if len(letters) > 2:
        return f"{len(letters)} unknown letters (2 at most)"
    for bad in ("^{", "^("):
        if bad in compact:
            return f"'{bad}' in it"
    if _CHAINED_POWER.search(compact):
        return "a chained power"
    if _LONG_EXPONENT.search(compact):
        return "a multi-digit exponent"
    if _LONG_SIGNED_EXPONENT.search(compact):
        return "a signed exponent of 4 digits or more"
    if _power_nesting(compact) > MAX_POWER_NESTING:
        return f"powers of powers nested deeper than {MAX_POWER_NESTING}"
    names = _unsafe_names(expr)
    if names is None:
        return "not a Python expression: its brackets do not pair up"
    if names:
        return "sympy's " + ", ".join(names[:3])
    return ""


class _TimedOut(BaseException):
    """The alarm rang (a BaseException: sympy's many `except Exception` must not swallow it)."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise _TimedOut in the block after `seconds` (SIGALRM); no limit off the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum, frame):
        raise _TimedOut()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


@functools.lru_cache(maxsize=1)
def _sympy():
    import sympy
    from sympy.parsing import sympy_parser
    transformations = sympy_parser.standard_transformations + (sympy_parser.implicit_multiplication_application,)
    return sympy, sympy_parser, transformations


def _sympy_zero(expr: str) -> bool:
    """Whether sympy simplifies `expr` (plain math, ^ for powers, implicit products) to 0; False
    where it cannot read or simplify it."""
    sympy, parser, transformations = _sympy()
    try:
        parsed = parser.parse_expr(expr.replace("^", "**"), global_dict=dict(_namespace()),
                                   transformations=transformations)
        return bool(sympy.simplify(parsed) == 0)
    except Exception:
        return False


# ---- the verdict -------------------------------------------------------------------------------

def _compare(truth: str, given: str, time_left: Callable[[], float]) -> str:
    """Why one normalised element is not the truth's ('' when it is); `time_left()`: the seconds
    the sympy step may still take."""
    if _FRACTION.search(truth) and _FRACTION.search(given):
        return "" if truth == given else f"{given} is not {truth} (fractions compare as written)"
    if _is_integer(truth) != _is_integer(given):
        return f"{given} is not {truth} (an integer and a non-integer)"
    expr = f"({truth})-({given})"
    refused = refusal(expr)
    if refused:
        return f"refused: not plain math ({refused})"
    _sympy()                                # imported before the clock starts
    seconds = time_left()
    if seconds <= 0:
        return "sympy timed out"
    with _time_limit(seconds):
        zero = _sympy_zero(expr)
    return "" if zero else f"{given} is not {truth} (sympy: the difference is not 0)"


def grade(given: str | None, truth: str, time_limit_s: float = TIME_LIMIT_S) -> MathVerdict:
    """Whether `given` (the last boxed answer, None where there is none) is the ground truth, by
    PRM800K's rules; sympy's part bounded by `time_limit_s` (on the main thread only)."""
    if given is None:
        return MathVerdict(False, "no answer")
    if mathd_normalize(given) == mathd_normalize(truth):
        return EQUAL
    truth_n, given_n = prm_normalize(truth), prm_normalize(given)
    if truth_n == given_n:
        return EQUAL
    if not given_n:
        return MathVerdict(False, "no answer")
    truth_elems, given_elems = _elements(truth_n), _elements(given_n)
    if len(truth_elems) > 1 and (truth_n[0] != given_n[0] or truth_n[-1] != given_n[-1]):
        return MathVerdict(False, f"{given_n} is not bracketed as {truth_n}")
    if len(truth_elems) != len(given_elems):
        return MathVerdict(False, f"{len(given_elems)} element(s) where the truth has {len(truth_elems)}")
    started: list[float] = []               # when the pair's first sympy step began

    def time_left() -> float:
        started.append(started[0] if started else time.monotonic())
        return time_limit_s - (time.monotonic() - started[0])

    try:
        for truth_elem, given_elem in zip(truth_elems, given_elems):
            why = _compare(truth_elem, given_elem, time_left)
            if why:
                return MathVerdict(False, why)
    except _TimedOut:
        return MathVerdict(False, "sympy timed out")
    return EQUAL


# ---- many pairs, in a child process ------------------------------------------------------------

def _wall_limit(n_pairs: int, time_limit_s: float) -> float:
    return n_pairs * time_limit_s + WALL_SLACK_S


def grade_many(pairs: list[tuple[str | None, str]], time_limit_s: float = TIME_LIMIT_S,
               memory_mb: int = 2048) -> list[MathVerdict]:
    """`grade` for every (given, truth) pair, in one child process of its own session (memory
    `memory_mb`, CPU time and wall clock pairs x `time_limit_s` + 30 s; each pair's sympy step
    `time_limit_s`). A pair left without a verdict when the child overruns or dies is unequal, with
    the reason. Nothing the child started is left running on return."""
    if not pairs:
        return []
    wall = _wall_limit(len(pairs), time_limit_s)
    limits = Limits(wall_s=wall, cpu_s=max(1, math.ceil(wall)), memory_bytes=memory_mb << 20)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(AUTOMATION)] + [p for p in [env.get("PYTHONPATH")] if p])
    argv = [sys.executable, "-m", "mlperf_llm.accuracy.math_equiv", f"--time-limit={time_limit_s}"]
    lines = "".join(json.dumps([given, truth]) + "\n" for given, truth in pairs)
    timed_out = False
    # _limit's preexec starts the child's own session (os.setsid, as start_new_session=True would)
    # before setting its limits (RLIMIT_AS, RLIMIT_CPU, ...): its pid is its process group
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            encoding="utf-8", errors="replace", env=env, preexec_fn=_limit(limits), close_fds=True)
    try:
        try:
            out, err = proc.communicate(lines, timeout=wall)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            out, err = proc.communicate()
    finally:
        _kill_group(proc.pid)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    found = _read_verdicts(out, len(pairs))
    if len(found) < len(pairs):
        missing = MathVerdict(False, "grader timed out" if timed_out else
                              "grader stopped: " + (_verdict(proc.returncode, False, err or "", limits)[1]
                                                    or "no verdict given"))
        return [found.get(i, missing) for i in range(len(pairs))]
    return [found[i] for i in range(len(pairs))]


def _read_verdicts(out: str, n: int) -> dict[int, MathVerdict]:
    found: dict[int, MathVerdict] = {}
    for line in (out or "").splitlines():
        try:
            row = json.loads(line)
            i = row["i"]
            if isinstance(i, int) and 0 <= i < n:
                found[i] = MathVerdict(bool(row["equal"]), str(row["why"]))
        except (ValueError, KeyError, TypeError):
            continue
    return found


def main(argv: list[str] | None = None) -> int:
    """The child of grade_many: [given, truth] JSON lines in, {"i", "equal", "why"} lines out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="seconds per pair (sympy step)")
    args = parser.parse_args(argv)
    for i, line in enumerate(sys.stdin):
        try:
            given, truth = json.loads(line)
            verdict = grade(None if given is None else str(given), str(truth), args.time_limit)
        except Exception as exc:            # a bad line, or the grader failed on this pair: next one
            verdict = MathVerdict(False, f"grader error: {type(exc).__name__}")
        sys.stdout.write(json.dumps({"i": i, "equal": verdict.equal, "why": verdict.why}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
