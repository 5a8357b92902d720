"""The printed plan reads top-down and its numbers are the order in which the steps' own work runs."""
import re

from cmengine import plantext
from enginefixtures import Runner, make_repo

HOOK = """
import os
def preprocess(i):
    with open(os.environ['ORDER_FILE'], 'a') as f:
        f.write(i['meta']['alias'] + '\\n')
    return {'return': 0}
"""


def repo(tmp_path):
    def step(manifest):
        return dict(manifest), {"customize.py": HOOK}
    return make_repo(str(tmp_path), {
        "top": step({"tags": ["top"], "deps": [{"tags": "a"}, {"tags": "b"}], "posthook_deps": [{"tags": "d"}]}),
        "a": step({"tags": ["a"], "deps": [{"tags": "c"}]}),
        "b": step({"tags": ["b"], "deps": [{"tags": "c"}]}),
        "c": step({"tags": ["c"]}),
        "d": step({"tags": ["d"]}),
    })


def test_a_step_comes_first_and_what_it_needs_is_indented_below_it(tmp_path):
    r = Runner([repo(tmp_path)], str(tmp_path / "cache"))
    assert r.plan("top")["return"] == 0
    lines = r.output.splitlines()
    assert lines[0] == "Plan for 'top' (5 distinct steps):" and lines[1] == plantext.LEGEND
    shape = [re.sub(r"  \[[0-9a-f]{12}\].*", "", line) for line in lines[2:]]
    assert shape == ["#4 top",
                     "  #2 a",
                     "    #1 c",
                     "  #3 b",
                     "    = #1 c  (planned above)",
                     "  #5 [posthook_deps] d"]


def test_the_numbers_are_the_order_in_which_the_steps_run(tmp_path, monkeypatch):
    order_file = tmp_path / "order.txt"
    monkeypatch.setenv("ORDER_FILE", str(order_file))
    r = Runner([repo(tmp_path)], str(tmp_path / "cache"))
    r.plan("top")
    numbered = {int(n): name for n, name in re.findall(r"^\s*#(\d+)\s+(?:\[\w+\] )?(\w+)", r.output, re.M)}
    assert r.run("top")["return"] == 0
    assert order_file.read_text().split() == [numbered[i] for i in sorted(numbered)]
