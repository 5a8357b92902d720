"""accuracy/math_equiv.py: MATH500 answers graded as OpenAI PRM800K's `grade_answer` grades them,
row by row, and hostile answers refused before sympy (which runs Python's eval) ever sees them.

How REFERENCE was recorded: openai/prm800k at commit 7ecc794703b2877f63226f2477a49b34f9b25163
(prm800k/grading/grader.py and math_normalize.py, unchanged), run in a separate Python 3.11.7 venv
with sympy 1.14.0 and pylatexenc 2.11: `grade_answer(given, truth)` for each row, the verdict
written here by hand-checked script output. The HOSTILE rows were run through the same code with
its `_sympy_parse` replaced by a stub that records the call and evaluates nothing: the note says
whether the reference refuses the row itself or would have handed it to sympy's eval.
"""
import pytest

from mlperf_llm.accuracy import math_equiv
from mlperf_llm.accuracy.math_equiv import grade, prm_normalize, refusal

# (given, truth, the reference's verdict)
REFERENCE = [
    # integers written differently
    ("1,000", "1000", True), ("1000", "1,000", True), ("5.0", "5", True), ("5", "5.0", True),
    ("005", "5", True), ("- 3", "-3", True),
    ("1,\\!000", "1000", True), ("1e3", "1000", True), ("2.99999999", "3", True),
    ("1,000,000", "1000000", True),
    ("3", "4", False), ("10.5", "10", False), ("-5", "5", False),
    # fractions
    ("\\frac{1}{2}", "1/2", True), ("1/2", "\\frac{1}{2}", True), ("\\dfrac12", "\\frac{1}{2}", True),
    ("\\tfrac{1}{2}", "\\frac12", True), ("2/4", "\\frac{1}{2}", False),
    ("\\frac{2}{4}", "\\frac{1}{2}", False),
    ("0.5", "\\frac{1}{2}", True), ("-\\frac{1}{2}", "-1/2", True), ("\\frac{-1}{2}", "-\\frac{1}{2}", True),
    ("1.5", "\\frac{3}{2}", True), ("0.333", "\\frac{1}{3}", False), ("\\frac{x}{2}", "x/2", True),
    ("\\frac{1}{3}", "\\frac{1}{4}", False),
    # square roots
    ("\\sqrt3", "\\sqrt{3}", True), ("2\\sqrt{2}", "\\sqrt{8}", True), ("\\sqrt{8}", "2\\sqrt2", True),
    ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}", True),
    ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", True), ("3\\sqrt{2}", "2\\sqrt{3}", False),
    ("\\sqrt{12}", "2\\sqrt{3}", True),
    ("\\frac{\\sqrt3}{2}", "\\frac{\\sqrt{3}}{2}", True), ("\\sqrt{2}", "1.414", False),
    # pi
    ("2\\pi", "2 \\pi", True), ("\\pi \\cdot 2", "2\\pi", True), ("6.28", "2\\pi", False),
    ("\\pi/2", "\\frac{\\pi}{2}", True),
    ("\\frac34\\pi", "\\frac{3\\pi}{4}", True), ("3\\pi", "2\\pi", False),
    # degrees
    ("30^\\circ", "30", True), ("30", "30^\\circ", True), ("30^{\\circ}", "30", True),
    ("30 degrees", "30", True), ("\\frac{\\pi}{6}", "30^\\circ", False),
    # units
    ("10 \\text{ cm}", "10", True), ("10 inches", "10", True), ("10\\text{ inches}", "10", True),
    ("5 \\text{cm}^2", "5", False),
    ("12 feet", "12", True), ("3 hours", "3", True), ("20 meters", "20", True), ("10 \\text{ cm}", "11", False),
    # percent and dollars
    ("50\\%", "50", True), ("50%", "50", True), ("\\$18.90", "18.90", True), ("\\$5", "5", True),
    ("$5", "5", True), ("\\$1,000", "1000", True),
    ("0.5", "50\\%", False), ("1 million", "1000000", False),
    # \text{...}
    ("\\text{(C)}", "(C)", True), ("C", "\\text{(C)}", True), ("\\text{(A)}", "\\text{(B)}", False),
    ("\\text{ 7}", "7", True),
    # tuples and intervals
    ("(1,2)", "(1, 2)", True), ("(1, 2)", "(1,2)", True), ("[0,1)", "(0,1)", False), ("(0,1)", "(0,1]", False),
    ("(2,1)", "(1,2)", False),
    ("(1,2,3)", "(1,2)", False), ("(-\\infty, 3)", "(-\\infty,3)", True),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})", True),
    ("(1/2, 3)", "(\\frac{1}{2}, 3)", True), ("(2/4, 3)", "(\\frac12,3)", False), ("1, 2", "1,2", True),
    ("2, 1", "1, 2", False),
    ("(1,000, 2)", "(1000,2)", True), ("(0.5, 2)", "(\\frac{1}{2}, 2)", True),
    ("(-\\infty,0)\\cup(1,\\infty)", "(-\\infty, 0) \\cup (1, \\infty)", True),
    # symbolic
    ("x^2+2x+1", "(x+1)^2", True), ("(x+1)^2", "x^2+2x+1", True), ("2x", "x*2", True), ("x*2", "2x", True),
    ("(x-1)(x+1)", "x^2-1", True),
    ("(x+1)^2", "x^2+1", False), ("3y+2x", "2x+3y", True), ("c+b+a", "a+b+c", False),
    ("\\frac{1}{2}x+\\frac12", "\\frac{x+1}{2}", False),
    ("x^{10}", "x^10", True), ("2^{10}", "1024", False), ("x(x+1)", "x^2+x", True), ("2x", "3x", False),
    # "k = 5"
    ("k = 5", "5", True), ("x=5", "5", True), ("abc=5", "5", False), ("y = 2x+3", "2x+3", True),
    # mixed numbers
    ("7 3/4", "\\frac{31}{4}", True), ("7\\frac{3}{4}", "\\frac{31}{4}", True), ("7 3/4", "7.75", True),
    ("-7 3/4", "-\\frac{31}{4}", False),
    # words
    ("\\text{Monday}", "\\text{Monday}", True), ("Monday", "\\text{Monday}", True),
    ("\\text{Tuesday}", "\\text{Monday}", False),
    ("\\text{evelyn}", "\\text{Evelyn}", True), ("\\text{no}", "\\text{yes}", False),
    ("East", "\\text{east}", True),
    # empty and None answers
    ("", "5", False), (None, "5", False), ("   ", "5", False), ("", "", True), ("\\text{}", "5", False),
    # other
    ("\\infty", "\\infty", True), ("1+i", "i+1", True), ("2\\alpha", "\\alpha+\\alpha", True),
    ("2\\theta", "\\theta+\\theta", True),
    ("1, 2, 3", "3, 2, 1", False), ("x**2", "x^2", True), ("2\\ln 2", "\\ln 4", True),
    ("\\frac{\\sqrt{6}}{3}", "\\sqrt{\\frac{2}{3}}", True),
    ("\\sqrt[3]{8}", "2", False),
]

# (given, truth, what the reference does with it): all must come back unequal, refused, with sympy
# never asked
WOULD_EVALUATE = "refused by us; the reference would evaluate it"
HOSTILE = [
    ("__import__('os').system('echo hi')", "x", "the reference refuses it too (more than 2 letters)"),
    ("x.__class__", "x", "the reference refuses it too (more than 2 letters)"),
    ("(1).real", "1/3", "the reference refuses it too (more than 2 letters)"),
    ("9^9^9^9", "x", "the reference refuses it too (a chained power)"),
    ("2^{10000000}", "x", "the reference refuses it too (a multi-digit exponent)"),
    ("1" * 5000, "x", WOULD_EVALUATE),
    ("2^0b11111111111111111111111111111", "x", WOULD_EVALUATE),     # 2^(2^29 - 1): a 64 MiB integer
    ("(1,)99999999999", "x", WOULD_EVALUATE),                        # a tuple of 10^11 entries
    ("[1]*99999999999", "x", WOULD_EVALUATE),                        # a list of 10^11 entries
    ("eye(99999)", "\\frac{1}{3}", WOULD_EVALUATE),                   # a matrix of 10^10 entries
    ("x!", "x", WOULD_EVALUATE),                                     # (9^9)! would not end
]


def test_the_table_is_as_described():
    assert len(REFERENCE) >= 80 and len({(g, t) for g, t, _ in REFERENCE}) == len(REFERENCE)
    assert {verdict for _, _, verdict in REFERENCE} == {True, False}


@pytest.mark.parametrize("given, truth, verdict", REFERENCE)
def test_grade_agrees_with_prm800k(given, truth, verdict):
    got = grade(given, truth)
    assert got.equal == verdict, got
    assert (got.why == "") == got.equal          # a reason exactly when unequal


@pytest.fixture
def no_sympy(monkeypatch):
    """sympy's step fails the test if reached: a hostile row must be refused before it."""
    def reached(expr):
        raise AssertionError(f"sympy was asked about {expr[:80]!r}")
    monkeypatch.setattr(math_equiv, "_sympy_zero", reached)


@pytest.mark.parametrize("given, truth, reference", HOSTILE, ids=lambda v: v[:30] if isinstance(v, str) else v)
def test_hostile_answers_are_refused(no_sympy, given, truth, reference):
    assert refusal(given)                                           # as written
    assert refusal(f"({prm_normalize(truth)})-({prm_normalize(given)})")    # as the sympy step would see it
    got = grade(given, truth)
    assert not got.equal and got.why
    if reference == WOULD_EVALUATE:
        assert got.why.startswith("refused: not plain math ("), got.why


@pytest.mark.parametrize("expr, words", [
    ("x" * 201, "longer than 200"),
    ("(x)-((1,)99999999999)", "comma or square bracket"),
    ("(x)-([1]*99)", "comma or square bracket"),
    ("(x)-(x!)", "character '!'"),
    ("(x)-(x.real)", "attribute access"),
    ("(1)-(1 .real)", "attribute access"),
    ("(x)-(x.α)", "attribute access"),
    ("(a+b)-(c)", "3 unknown letters"),
    ("(x)-(2^{3})", "character '{'"),
    ("(x)-(2^(3))", "'^(' in it"),
    ("(x)-(9^9 ^9)", "a chained power"),
    ("(x)-(9**-9**9)", "a chained power"),
    ("(x)-(2^10)", "a multi-digit exponent"),
    ("(x)-(2^-1000)", "a signed exponent"),
    ("(x)-((((((2^2)^2)^2)^2)^2))", "nested deeper than 4"),
    ("(x)-(2^0x7fffffff)", "base 2, 8 or 16"),
    ("(x)-(9^0o777777777)", "base 2, 8 or 16"),
    ("(1)-(eye(99999))", "sympy's eye"),
    ("(x)-(ff(9))", "sympy's ff"),
    ("(1)-(1e1eye 9)", "sympy's eye"),               # the tokenizer's names (1e1, eye), not a regex's
    ("(x)-((x)", "brackets do not pair up"),
])
def test_refusal_says_why(expr, words):
    assert words in refusal(expr)


@pytest.mark.parametrize("expr", [
    "(x^2+2x+1)-((x+1)^2)", "(sqrt(2)/2)-(1/sqrt(2))", "(3pi/4)-(3/4pi)", "(2θ)-(θ+θ)", "(2ln2)-(ln4)",
    "(1.5)-(3/2)", "(x**2)-(x^2)", "(10x)-(x10)", "(0.5x)-(x/2)", "((((2^2)^2)^2)^2)-(65536)",
])
def test_plain_math_is_not_refused(expr):
    assert refusal(expr) == ""


def test_sympy_parses_without_python_builtins():
    namespace = math_equiv._namespace()
    assert namespace["__builtins__"] == {}
    assert not {"__import__", "eval", "exec", "open", "getattr"} & set(namespace)
    assert namespace["sqrt"] is not None and namespace["pi"] is not None


def test_no_answer_is_unequal():
    assert grade(None, "5") == math_equiv.MathVerdict(False, "no answer")
    assert grade("  ", "5") == math_equiv.MathVerdict(False, "no answer")


def test_the_sympy_step_is_stopped_at_its_time_limit():
    # a pair no other test grades (sympy's caches would make it quick), whose difference takes
    # sympy's simplify far longer than a millisecond
    got = grade("(x+3)^6", "x^6+18x^5+135x^4+540x^3+1215x^2+1458x+729", time_limit_s=0.001)
    assert got == math_equiv.MathVerdict(False, "sympy timed out")
    assert grade("(x+3)^6", "x^6+18x^5+135x^4+540x^3+1215x^2+1458x+729").equal    # given the time, equal
