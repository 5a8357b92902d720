"""The official mlcommons/inference sources the tests run (checker, TEST06, reference scripts):
the offline copies in ../shared/mlcommons-inference/ beside the repository (read its README), one
per round as mlperf_llm.rounds names it (`shared_copy`). Never a machine path or an env variable:
every clone, CI's included, has ../shared next to it, so these tests run instead of skipping."""
import functools
import os

from mlperf_llm.rounds import get_round

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "mlcommons-inference"))


def inference_source(round_name: str = "5.1") -> str:
    """The source of a round ("v5.1", "6.1", ...): its checker, TEST06 and reference llama2-70b.
    A missing copy fails the test that needs it (it is part of the project's checkout layout)."""
    path = os.path.join(SHARED, get_round(round_name).shared_copy)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path} is missing: the tests need ../shared/mlcommons-inference/ next to the "
                                "repository (see its README.md)")
    return path


@functools.lru_cache(maxsize=None)
def checker_tables(round_name: str, names=("ACC_PATTERN", "MODEL_CONFIG")) -> dict:
    """Module-level tables of the round's own checker (the script's submission_checker.py, or the
    package's constants.py from v6.0), read from its source without running it: each is one
    assignment of literals and arithmetic, evaluated with no builtins."""
    import ast
    rnd = get_round(round_name)
    folder = os.path.join(inference_source(round_name), "tools", "submission")
    path = (os.path.join(folder, "submission_checker", "constants.py") if rnd.checker == "package"
            else os.path.join(folder, "submission_checker.py"))
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) in names):
            found[node.targets[0].id] = eval(compile(ast.Expression(node.value), path, "eval"), {"__builtins__": {}})
    missing = set(names) - set(found)
    if missing:
        raise LookupError(f"{path} has no module-level {', '.join(sorted(missing))}: the checker's layout changed")
    return found
