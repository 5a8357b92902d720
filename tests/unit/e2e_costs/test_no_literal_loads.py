"""No end-to-end test assumes the host's speed (issue 43): a load, target or wall-clock limit that an
e2e test gives or waits by is taken from this host's measured pace (tests/e2e/costs.py: Pace), from a
named limit that is not the host's pace (NO_QUERY_WORK_S, STOP_WAIT_S), or left to the run to derive;
never a number written in the test. A fixed load that a fast host meets and a slow one does not made
CI red on the slow kind of host (llama3.1-8b at --server_target_qps=4: p99 TPOT 120 ms of 100).

Seed 003's command is kept as the seed typed it (`seed_command` in test_seed003_command.py): its
test asserts only what does not depend on the host.

This reads the e2e files' syntax trees (ast); it runs nothing."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parents[2] / "e2e"
VERBATIM = {("test_seed003_command.py", "seed_command")}     # (file, function) kept as a seed typed it
LOAD_FLAG = re.compile(r"--(?:server|offline|interactive)_target_qps=\d|--singlestream_target_latency=\d"
                       r"|--max_test_duration=\d|--search_budget=\d")
LOAD_KWARGS = {"server_target_qps", "offline_target_qps", "interactive_target_qps", "singlestream_target_latency",
               "max_test_duration_s", "timeout", "timeout_s", "limit_s", "deadline"}
LOAD_NAME = re.compile(r"(?:^|_)(?:QPS|TIMEOUT|TIMEOUT_S|LIMIT_S|DEADLINE)$")
CLOCKS = {"monotonic", "time", "perf_counter"}
WAITS = {"wait", "finish", "wait_cm", "communicate", "join", "result"}     # their positional limit


def _number(node: ast.AST) -> bool:
    """A number written in the source: 60, 2.0, -1, 60 * 5."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _number(node.operand)
    if isinstance(node, ast.BinOp):
        return _number(node.left) and _number(node.right)
    return False


def _calls(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name))
               and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in names for n in ast.walk(node))


def _verbatim_lines(tree: ast.AST, filename: str) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (filename, node.name) in VERBATIM:
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def literal_loads(source: str, filename: str = "<e2e>") -> list[str]:
    """Each place in an e2e test's source that gives or waits by a number of its own: 'file:line: what'."""
    tree = ast.parse(source)
    skip = _verbatim_lines(tree, filename)
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found: set[tuple[int, str]] = set()

    def say(node: ast.AST, what: str) -> None:
        if node.lineno not in skip:
            found.add((node.lineno, what))

    for node in ast.walk(tree):
        if id(node) in docs:          # a docstring may name a flag
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and LOAD_FLAG.search(node.value):
            say(node, f"a load flag with a number: {LOAD_FLAG.search(node.value).group(0)}...")
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if LOAD_FLAG.search(text):
                say(node, f"a load flag with a number: {LOAD_FLAG.search(text).group(0)}...")
        elif isinstance(node, ast.keyword) and node.arg in LOAD_KWARGS and _number(node.value):
            say(node.value, f"{node.arg}= a number")
        elif isinstance(node, ast.Assign) and _number(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name) and LOAD_NAME.search(t.id):
                    say(node, f"{t.id} = a number")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) \
                and _calls(node, {"limit_s"}) and (_number(node.left) or _number(node.right)):
            say(node, "a number added to a limit from the pace")
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) \
                and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in WAITS \
                and any(_number(a) for a in node.args):
            say(node, "a wait with a number")
        elif isinstance(node, ast.Compare) and _calls(node.left, CLOCKS) \
                and any(_number(c) for c in node.comparators):
            say(node, "a clock compared with a number")
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


@pytest.mark.parametrize("path", sorted(E2E.glob("*.py")), ids=lambda p: p.name)
def test_no_e2e_file_gives_or_waits_by_a_number_of_its_own(path):
    assert literal_loads(path.read_text(), path.name) == []


def test_the_check_finds_each_kind_of_literal_load():
    bad = '''
import time
SERVER_QPS = 2.0
ARGS = ["--server_target_qps=4", f"--offline_target_qps=10", "--model=x"]
def t(pace, proc, t0):
    run_all(HarnessRequest(server_target_qps=2.0))
    proc.wait(timeout=60)
    finish(proc, pace.limit_s(queries=0) + 600)
    finish(proc, log, 300)
    while time.monotonic() - t0 < 30:
        pass
'''
    found = literal_loads(bad, "bad.py")
    assert [f.split(": ", 1)[1] for f in found] == [
        "SERVER_QPS = a number", "a load flag with a number: --offline_target_qps=1...",
        "a load flag with a number: --server_target_qps=4...", "server_target_qps= a number",
        "timeout= a number", "a number added to a limit from the pace", "a wait with a number",
        "a clock compared with a number"]


def test_what_the_pace_gives_and_seed_003s_verbatim_command_pass():
    good = '''
def seed_command(url):
    return ["--server_target_qps=9.2", "--offline_target_qps=10"]
def t(pace, proc):
    args = [f"--server_target_qps={pace.burst_qps(4)}"]
    proc.wait(timeout=STOP_WAIT_S)
    run_all(HarnessRequest(server_target_qps=pace.burst_qps(4)))
'''
    assert literal_loads(good, "test_seed003_command.py") == []
    # the same function elsewhere is not the seed's command
    assert literal_loads(good, "other.py") == ["other.py:3: a load flag with a number: --offline_target_qps=1...",
                                               "other.py:3: a load flag with a number: --server_target_qps=9..."]
