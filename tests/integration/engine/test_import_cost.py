"""What importing the engine costs every `cm` command: the modules it must not pull in.

Each of these was measured (docs/benchmarks-engine.md) and moved out of the import path: the
engine imports them where they are needed (a failing step, a native step, a fresh build), so a
fully cached `cm run script` never pays for them. This test imports the engine in a fresh
interpreter (the one place where import side effects are visible) and names any that came back.
"""
import json
import os
import subprocess
import sys

AUTOMATION = os.path.join(os.path.dirname(__file__), "..", "..", "..", "automation")

# module -> why it stays out of the cached path
KEPT_OUT = {
    "dataclasses": "each dataclass exec()s generated methods at import (~0.2-0.9 ms apiece)",
    "hashlib": "loads OpenSSL (4-6 ms); the built-in _sha256 gives the same digests",
    "subprocess": "only a native step (run.sh) needs it",
    "shutil": "only removing or moving entries needs it (pulls bz2/lzma)",
    "difflib": "only a 'did you mean' message needs it",
    "signal": "only describing a failed step's exit needs it",
    "glob": "only cache_key_files needs it",
    "ast": "only reading the imports of a file changed since the fingerprint memo needs it",
}


def test_engine_import_leaves_out_what_a_cached_run_does_not_use():
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); "
            "import cmengine.cli, cmengine.executor; "
            f"print(json.dumps(sorted(m for m in {sorted(KEPT_OUT)!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, os.path.abspath(AUTOMATION)],
                         capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert not loaded, "importing the engine now imports " + "; ".join(
        f"{m} ({KEPT_OUT[m]})" for m in loaded)
