"""Issue 37: what a third party hands us, made hostile, in the quick lane. Records that ask a replay for
more than the benchmark, tarballs and folders past their bounds or leading out of themselves, page
values holding markup, names that cannot be folders. Each is refused before anything runs or is
written, naming what and why (or shown as text). Ray node records: tests/unit/raycluster/
test_node_record_trust.py."""
import dataclasses
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from mlperf_llm import untrusted
from mlperf_llm.reproduce import replay, trust
from mlperf_llm.reproduce.source import SourceError, open_submission
from recfix import make_record

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures" / "submission"


def _opts(tmp_path, **kw):
    return replay.Options(source="x", results_dir=str(tmp_path / "rep"), work_dir=str(tmp_path / "w"), **kw)


def _asking(tmp_path, tags=None, inputs=(), env=(), adr=(), alias=""):
    rec = make_record(tmp_path)
    req = dict(rec.request, inputs={**rec.request["inputs"], **dict(inputs)}, env={**rec.request["env"], **dict(env)},
               adr={**rec.request["adr"], **dict(adr)}, alias=alias)
    if tags:
        req["tags"] = tags
    return dataclasses.replace(rec, request=req)


# (what the record asks, the words the refusal names it by)
HOSTILE_RECORDS = [
    (dict(tags=["get", "generic-python-lib", "_package.evil"]), "--tags=get,generic-python-lib,_package.evil"),
    (dict(alias="get-generic-python-lib"), "the script 'get-generic-python-lib'"),
    (dict(tags=["run-mlperf", "inference", "_full", "_package.evil"]), "the tag _package.evil"),
    (dict(inputs={"pip_extra_args": "--index-url https://evil.example/simple"}),
     "--pip_extra_args=--index-url https://evil.example/simple"),
    (dict(env={"HF_ENDPOINT": "https://evil.example"}), "--env.HF_ENDPOINT=https://evil.example"),
    (dict(env={"CM_VLLM_EXTRA_ARGS": "--trust-remote-code"}), "--env.CM_VLLM_EXTRA_ARGS=--trust-remote-code"),
    (dict(env={"PIP_INDEX_URL": "https://evil.example/simple"}), "--env.PIP_INDEX_URL"),
    (dict(inputs={"api_server": "http://203.0.113.9:8000"}), "--api_server=http://203.0.113.9:8000"),
    (dict(inputs={"ray_address": "203.0.113.9:6379"}), "--ray_address=203.0.113.9:6379"),
    (dict(inputs={"usage_stats": "yes"}), "--usage_stats=yes"),
    (dict(adr={"ml-model": {"version": "9.9", "env": {"HF_ENDPOINT": "x"}}}), "--adr.ml-model="),
    (dict(adr={"python": {"tags": "_name.evil"}}), "--adr.python="),
]


@pytest.mark.parametrize("asks, named", HOSTILE_RECORDS)
def test_a_record_asking_beyond_the_benchmark_is_refused_naming_it(tmp_path, asks, named):
    plan = replay.plan_replay(_asking(tmp_path, **asks), replay.Host(), _opts(tmp_path), exists=lambda p: False)
    (refusal,) = [r for r in plan.refusals if "unless you trust the record" in r]
    assert named in refusal and "--trust_record=yes" in refusal


def test_refused_before_any_step_runs_naming_each_and_replayed_as_recorded_when_trusted(tmp_path):
    rec = _asking(tmp_path, inputs={"pip_extra_args": "--index-url https://evil.example/simple"},
                  env={"HF_ENDPOINT": "https://evil.example"})
    tree = tmp_path / "tree"
    meas = tree / "open" / "me" / "results" / "sys" / "llama2-70b-99" / "Offline"
    meas.mkdir(parents=True)
    (meas / "cm4mlperf-record.json").write_text(rec.to_json())
    ran = []
    with pytest.raises(replay.ReplayError) as e:
        replay.reproduce(dataclasses.replace(_opts(tmp_path), source=str(tree)), lambda request: ran.append(request) or {},
                         say=lambda s: None, host=replay.Host())
    assert ran == [], "a step ran before the refusal"
    assert "--pip_extra_args=" in str(e.value) and "--env.HF_ENDPOINT=" in str(e.value)
    plan = replay.plan_replay(rec, replay.Host(), _opts(tmp_path, trust_record=True), exists=lambda p: False)
    assert not plan.refusals
    assert plan.request["pip_extra_args"] == "--index-url https://evil.example/simple"
    assert plan.request["env"]["HF_ENDPOINT"] == "https://evil.example"
    assert any(s.startswith("--trust_record=yes: replayed as the record asks") for s in plan.substitutions)


def test_what_a_replay_repeats_is_the_benchmark_its_variations_and_loopback_servers():
    s = trust.screen(["run-mlperf", "inference", "_full", "_embedded", "_r6.1", "_model.llama2-70b-99"],
                     {"model": "llama2-70b-99", "api_server": "http://127.0.0.1:8000,http://localhost:9000",
                      "hf_token": "<secret: present>"},
                     {"CM_VLLM_DTYPE": "float32"}, {"dataset": {"tags": "_size.8"}})
    assert s.untrusted == [] and s.inputs["api_server"].startswith("http://127.0.0.1")
    assert s.adr == {"dataset": {"tags": "_size.8"}} and s.env == {"CM_VLLM_DTYPE": "float32"}
    assert not trust.loopback("http://127.0.0.1.evil.example:80") and not trust.loopback("file:///etc/passwd")


def _tar(path: Path, members: list[tuple[str, bytes | None, str]]) -> Path:
    """A tarball of (name, content, kind) members: kind file, dir, symlink (content: its target)."""
    with tarfile.open(path, "w:gz" if str(path).endswith(".gz") else "w") as t:
        for name, content, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, content.decode()
                t.addfile(info)
            else:
                info.size = len(content)
                t.addfile(info, io.BytesIO(content))
    return path


def _nothing_written(work: Path) -> bool:
    return not work.exists() or not [p for p in work.rglob("*")]


@pytest.mark.parametrize("members, named", [
    ([("open/me/x.txt", b"x", "file"), ("../escape.txt", b"x", "file")], "'../escape.txt'"),
    ([("open/me/link", b"/etc/passwd", "symlink")], "'open/me/link'"),
    ([("/abs.txt", b"x", "file")], "'/abs.txt'"),
])
def test_an_archive_member_out_of_it_or_a_link_is_refused_and_nothing_written(tmp_path, members, named):
    tarball = _tar(tmp_path / "t.tar.gz", members)
    with pytest.raises(SourceError, match="not a plain file or folder inside the archive") as e:
        open_submission(str(tarball), str(tmp_path / "work"))
    assert named in str(e.value) and _nothing_written(tmp_path / "work")


def test_an_archive_past_the_member_limit_is_refused_naming_the_member_and_the_limit(tmp_path):
    tarball = _tar(tmp_path / "t.tar.gz", [(f"open/me/f{i}.txt", b"x", "file") for i in range(5)])
    with pytest.raises(SourceError) as e:
        open_submission(str(tarball), str(tmp_path / "work"), untrusted.Limits(max_members=4))
    assert "more than 4 members (at 'open/me/f4.txt')" in str(e.value) and "--max_archive_members" in str(e.value)
    assert _nothing_written(tmp_path / "work")


def test_the_default_limits_refuse_a_6_gib_archive_before_writing_anything(tmp_path):
    # a plain tar whose one member says 6 GiB: the file is sparse (no 6 GiB written here)
    tarball = tmp_path / "big.tar"
    info = tarfile.TarInfo("open/me/huge.bin")
    info.size = 6 * untrusted.GIB
    with open(tarball, "wb") as f:
        f.write(info.tobuf(format=tarfile.GNU_FORMAT))
        f.truncate(512 + 6 * untrusted.GIB + 2 * 512 * 10)
    with pytest.raises(SourceError) as e:
        open_submission(str(tarball), str(tmp_path / "work"))
    assert "more than 4 GiB unpacked (at member 'open/me/huge.bin', 6.00 GiB so far)" in str(e.value)
    assert "--max_archive_gib" in str(e.value) and _nothing_written(tmp_path / "work")


@pytest.mark.parametrize("name, keep", [("t.tar.gz", 1000), ("t.tar.gz", 60), ("t.tar", 3000)])
def test_a_truncated_archive_is_refused_as_not_readable_and_nothing_written(tmp_path, name, keep):
    """`head -c N good.tar.gz > bad.tar.gz`: it raised EOFError (gzip) or tarfile.ReadError (plain tar)
    out of the step's hook, a traceback instead of the error a non-gzip file gets."""
    members = [(f"open/me/f{i}.txt", os.urandom(4000), "file") for i in range(4)]
    whole = _tar(tmp_path / ("whole" + name[1:]), members)
    cut = tmp_path / name
    cut.write_bytes(whole.read_bytes()[:keep])
    with pytest.raises(SourceError) as e:
        open_submission(str(cut), str(tmp_path / "work"))
    assert f"--from={cut}: {cut}: not a readable tarball" in str(e.value)
    assert "Give a submission folder or the .tar.gz the submission step wrote" in str(e.value)
    assert _nothing_written(tmp_path / "work") and not [n for n in os.listdir(tmp_path) if n.startswith(".unpack-")]


def test_an_archive_is_unpacked_into_a_fresh_folder_only(tmp_path):
    tarball = _tar(tmp_path / "t.tar.gz", [("open/me/x.txt", b"x", "file")])
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "mine.txt").write_text("kept")
    with pytest.raises(untrusted.UntrustedError, match="exists already"):
        untrusted.unpack(str(tarball), str(dest))
    assert (dest / "mine.txt").read_text() == "kept" and sorted(os.listdir(dest)) == ["mine.txt"]
    untrusted.unpack(str(tarball), str(tmp_path / "fresh"))
    assert (tmp_path / "fresh" / "open" / "me" / "x.txt").read_bytes() == b"x"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".unpack-")]


def test_a_folder_with_a_link_out_of_it_is_refused_and_one_inside_it_kept(tmp_path):
    tree = tmp_path / "tree"
    (tree / "open" / "me").mkdir(parents=True)
    (tree / "open" / "me" / "README.md").write_text("x")
    (tree / "open" / "me" / "inside").symlink_to(tree / "open" / "me" / "README.md")
    untrusted.check_folder(str(tree))
    (tree / "open" / "me" / "out").symlink_to("/etc")
    with pytest.raises(SourceError, match=r"a link to /etc, out of") as e:
        open_submission(str(tree), str(tmp_path / "work"))
    assert str(tree / "open" / "me" / "out") in str(e.value)


def test_a_published_file_past_the_read_cap_or_out_of_the_folder_is_a_finding_not_read(tmp_path, monkeypatch):
    from mlperf_llm.published import reader
    monkeypatch.setattr(reader, "MAX_READ_BYTES", 100)
    monkeypatch.setattr(untrusted, "MAX_READ_BYTES", 100)
    r = reader._Reader(tmp_path)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(["x" * 200]))
    assert r.text(big, "the big file") is None
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret")
    (tmp_path / "link.txt").symlink_to(outside)
    assert r.text(tmp_path / "link.txt", "the link") is None
    said = [f.what for f in r.findings]
    assert any("more than the 100 read of one file" in w for w in said), said
    assert any("leads out of" in w for w in said), said


def test_page_values_holding_markup_are_escaped_in_both_pages():
    from mlperf_llm.reproduce import compare
    from mlperf_llm.templates import page_env
    page = page_env(str(ROOT / "automation" / "mlperf_llm" / "submission" / "templates"))
    assert page.from_string("<p>{{ v }}</p>").render(v="<script>x()</script>") == \
        "<p>&lt;script&gt;x()&lt;/script&gt;</p>"
    report = {"tests": [], "comparable": True, "accuracy_equal": None, "accuracy_expected_exact": True,
              "differing_inputs": [], "inputs_compared": True, "substitutions": ["<img src=x onerror=alert(1)>"],
              "notes": [], "source": "<b>src</b>"}
    html = compare.to_html(report)
    assert "<img src=x" not in html and "&lt;img src=x" in html and "<b>src</b>" not in html


@pytest.mark.parametrize("name", ["Acme\tCorp", "Acme/../x", "..", ".hidden", "Acme\\x", "Acme Corp", "a\nb"])
def test_a_submitter_that_cannot_be_a_folder_is_refused(name):
    from mlperf_llm.submission.errors import SubmissionError
    from mlperf_llm.submission.inputs import resolve_submitter
    with pytest.raises(SubmissionError, match="cannot be a folder name"):
        resolve_submitter(name, "open", "test")


def test_the_original_runs_own_vllm_is_said_not_run(tmp_path):
    """--vllm_python (issue 38: a vLLM the submitter already has) is a path of the original machine: a
    replay never runs that interpreter, refuses nothing for it, and says so."""
    plan = replay.plan_replay(_asking(tmp_path, inputs={"vllm_python": "/opt/rocm-vllm/bin/python"}), replay.Host(),
                              _opts(tmp_path), exists=lambda p: True)
    assert not plan.refusals, plan.refusals
    assert "vllm_python" not in plan.request
    (said,) = [s for s in plan.substitutions if s.startswith("--vllm_python=/opt/rocm-vllm/bin/python")]
    assert "is not run here" in said


def test_a_reproduction_is_never_written_inside_the_folder_it_replays(tmp_path):
    """--from=<a submission folder> --results_dir=<a folder inside it>: the replay's results, submission
    and table went into the source tree (open/out/... beside the submitter's folder, as if a
    submitter). Refused before anything runs; a folder beside it, or a tarball's own folder, is fine."""
    src = tmp_path / "nest"
    (src / "open" / "me").mkdir(parents=True)
    for inner in (src / "open" / "out", src):
        with pytest.raises(replay.ReplayError, match=r"is inside --from=.*: a reproduction writes nothing into the folder"):
            replay.check_results_dir(str(inner), str(src))
    replay.check_results_dir(str(tmp_path / "out"), str(src))
    tarball = _tar(tmp_path / "t.tar.gz", [("open/me/x.txt", b"x", "file")])
    replay.check_results_dir(str(tmp_path / "out"), str(tarball))
    assert not (src / "open" / "out").exists()
