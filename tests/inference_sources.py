"""The official mlcommons/inference sources the tests run (checker, TEST06, reference scripts):
the offline copies in ../shared/mlcommons-inference/ beside the repository (read its README), one
per round as mlperf_llm.rounds names it (`shared_copy`). Never a machine path or an env variable:
every clone, CI's included, has ../shared next to it, so these tests run instead of skipping."""
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
