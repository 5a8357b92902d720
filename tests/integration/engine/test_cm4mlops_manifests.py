"""Every manifest of the cm4mlops snapshot either loads or is reported with its reason, and every
script that loads either plans or stops with an engine error (never a crash): nothing is dropped
without a word. The manifests that do not load are the ones docs/cm4mlops.md lists."""
import io
import os
import re
import shutil

import pytest

from cmengine import cli
from cmengine.errors import ManifestError
from cmengine.manifest import load_manifest
from cmengine.registry import Registry, Repo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
UPSTREAM = os.path.join(ROOT, "..", "shared", "cm4mlops")
DOC = os.path.join(ROOT, "docs", "cm4mlops.md")

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(UPSTREAM, "script")),
                                reason="needs ../shared/cm4mlops (the upstream snapshot)")


def folders():
    sdir = os.path.join(UPSTREAM, "script")
    return sorted(os.path.join(sdir, n) for n in os.listdir(sdir)
                  if os.path.isdir(os.path.join(sdir, n)))


def test_every_manifest_loads_or_says_why():
    failed = {}
    for folder in folders():
        try:
            m = load_manifest(folder)
            assert m.alias and m.tags, folder
        except ManifestError as e:
            text = str(e)
            assert folder in text and len(text.split(":", 1)[-1].strip()) > 10, text
            failed[os.path.basename(folder)] = text
    listed = set(re.findall(r"^- `([^`]+)` \(", _section("Manifests that do not load"), re.M))
    assert set(failed) == listed, ("docs/cm4mlops.md lists other failing manifests than the "
                                   f"snapshot has: only failing {sorted(set(failed) - listed)}, "
                                   f"only listed {sorted(listed - set(failed))}")


def test_the_registry_keeps_or_reports_every_script(tmp_path):
    repo = str(tmp_path / "cm4mlops")
    shutil.copytree(UPSTREAM, repo, symlinks=True)
    reg = Registry([Repo("cm4mlops", repo)])
    with_manifest = [f for f in folders() if any(os.path.isfile(os.path.join(f, n))
                                                 for n in ("_cm.yaml", "_cm.json"))]
    # a folder without a manifest is not a script (load_manifest reports it, above)
    assert len(reg.scripts) + len(reg.broken) == len(with_manifest)
    assert len(reg.check()) == len(reg.broken) and reg.warnings()


def test_every_script_that_loads_plans_or_stops_with_an_engine_error(tmp_path, monkeypatch):
    repo = str(tmp_path / "cm4mlops")
    shutil.copytree(UPSTREAM, repo, symlinks=True)
    monkeypatch.chdir(tmp_path)
    session = cli.Session([Repo("cm4mlops", repo)], cache_dir=str(tmp_path / "cache"),
                          out=io.StringIO())
    session.registry = Registry([Repo("cm4mlops", repo)])
    planned = 0
    for m in session.registry.scripts:
        r = cli.guarded(lambda: session.run({"action": "run", "artifact": m.alias, "quiet": True,
                                             "dry_run": True}))
        assert r["return"] == 0 or r.get("error"), m.alias   # an engine bug would raise here
        planned += r["return"] == 0
    documented = re.search(r"\| \*\*all\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\*",
                           open(DOC).read())
    assert documented, "docs/cm4mlops.md has no totals row"
    assert (len(session.registry.scripts), planned) == (int(documented[2]), int(documented[3])), \
        "docs/cm4mlops.md's load/plan totals are not what the snapshot gives: rerun " \
        "benchmarks/cm4mlops_coverage.py and update the table"


def _section(title: str) -> str:
    text = open(DOC).read()
    start = text.index(title)
    end = text.find("\n\n", start + 1)
    return text[start:] if end < 0 else text[start:end]
