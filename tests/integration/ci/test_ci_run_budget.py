"""The last line of every CI log: `.ci/run`'s own `took` (read from the script, run by bash) says how
long the run took against the budget, and warns only where the budget is set (no AVX-512) and the
run took longer (docs/testing.md, "Keeping a new e2e test inside the budget")."""
import re
import subprocess
from pathlib import Path

import pytest

CI_RUN = Path(__file__).resolve().parents[3] / ".ci" / "run"


def took(avx512: str, seconds: int) -> subprocess.CompletedProcess:
    body = re.search(r"^BUDGET_S=.*?^}$", CI_RUN.read_text(), re.S | re.M)
    assert body, f"{CI_RUN} has no BUDGET_S and took()"
    return subprocess.run(["bash", "-c", f"AVX512={avx512}\n{body.group(0)}\nSECONDS={seconds}; took"],
                          capture_output=True, text=True, check=True)


@pytest.mark.parametrize("avx512, seconds, over", [("no", 2401, 1), ("no", 2400, 0), ("yes", 3000, 0)])
def test_the_run_ends_with_its_time_against_the_budget(avx512, seconds, over):
    res = took(avx512, seconds)
    assert res.stdout.startswith(f"== .ci/run took {seconds // 60}m{seconds % 60}s on this host (AVX-512 {avx512}); "
                                 "the budget: 40 minutes without AVX-512")
    assert ("over the budget by 1 s" in res.stderr) == bool(over), res.stderr
