"""TEST06's LoadGen: which wheels cannot run TEST06, when LoadGen is built from the source at hand,
what of the source is built (and hashed), and where the harness finds the mlperf.conf a build lacks.
In-process; the real build is tests/integration/sysinfo/test_loadgen_source_build.py."""
import os
import sys

import pytest

from mlperf_llm.harness.rounds import loadgen_check
from mlperf_llm.rounds import get_round
from mlperf_llm.sysinfo.loadgen_conf import CONF_BESIDE, conf_beside_loadgen
from mlperf_llm.sysinfo.loadgen_src import (LoadgenBuildError, for_test06, read_source, source_files,
                                            not_verified_reason, wheel_ignores_audit_sampling)


def make_source(root, files=None):
    """A fake mlcommons/inference checkout: {relative path: text} under root."""
    files = files or {"loadgen/setup.py": "setup()", "loadgen/loadgen.cc": "int x;",
                      "loadgen/bindings/python_api.cc": "int y;", "mlperf.conf": "*.*.qsl_rng_seed = 1\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


def no_tools_missing(python):
    return []


@pytest.mark.parametrize("version,ignores", [("4.1.30", True), ("4.1.12", True), ("4.1.7", False),
                                             ("4.1", False), ("5.0.21", False), ("6.0.17", False), ("", False)])
def test_which_loadgen_wheels_ignore_the_audit_sampling(version, ignores):
    assert wheel_ignores_audit_sampling(version) is ignores


@pytest.mark.parametrize("wheel,has_source,missing,builds,problem", [
    ("5.1.2", True, [], False, ""),                                   # the wheel logs TEST06's samples
    ("6.0.17", False, [], False, ""),
    ("4.1.30", True, [], True, ""),                                   # v4.1 with a source: built
    ("4.1.30", False, [], False, "no mlcommons/inference source is at hand"),
    ("4.1.30", True, ["no C++ compiler (c++ is not on PATH; apt-get install g++)"], False,
     "no C++ compiler (c++ is not on PATH; apt-get install g++); then run again"),
])
def test_the_test06_loadgen_per_wheel_source_and_tools(tmp_path, wheel, has_source, missing, builds, problem):
    source = make_source(tmp_path / "inference") if has_source else ""
    choice = for_test06(wheel, source, sys.executable, tools=lambda python: missing)
    assert (choice.source is not None) is builds
    assert (problem in choice.problem) if problem else choice.problem == ""
    if choice.problem:   # the NOT VERIFIED message keeps saying what the wheel does, and the fix
        assert choice.problem.startswith(f"the LoadGen {wheel} wheel ignores audit.config's accuracy_log_sampling_target")
        assert "--inference_src" in choice.problem or "apt-get install" in choice.problem


def test_a_folder_that_is_no_inference_source_is_named(tmp_path):
    choice = for_test06("4.1.30", str(tmp_path), sys.executable, tools=no_tools_missing)
    assert choice.source is None and f"{tmp_path}/loadgen/setup.py does not exist" in choice.problem
    with pytest.raises(LoadgenBuildError, match="not an mlcommons/inference checkout"):
        read_source(str(tmp_path))


def test_what_is_built_is_the_top_of_loadgen_and_its_bindings(tmp_path):
    root = make_source(tmp_path / "inference", {
        "loadgen/setup.py": "", "loadgen/loadgen.cc": "", "loadgen/bindings/python_api.cc": "",
        "loadgen/.hidden": "", "loadgen/mlperf_loadgen.cpython-311-x86_64-linux-gnu.so": "",
        "loadgen/demos/demo.py": "", "loadgen/build/temp/x.o": ""})
    assert source_files(f"{root}/loadgen") == (".hidden", "bindings/python_api.cc", "loadgen.cc", "setup.py")


def test_the_digest_follows_the_content_not_the_place(tmp_path):
    a = read_source(make_source(tmp_path / "a"))
    b = read_source(make_source(tmp_path / "b"))
    assert a.digest == b.digest and a.loadgen_dir != b.loadgen_dir
    (tmp_path / "b" / "loadgen" / "bindings" / "python_api.cc").write_text("int z;")
    assert read_source(str(tmp_path / "b")).digest != a.digest


def test_the_mlperf_conf_of_loadgen_first_then_of_the_source(tmp_path):
    root = make_source(tmp_path / "v41")                      # v4.1: mlperf.conf at the top only
    assert read_source(root).mlperf_conf == f"{root}/mlperf.conf"
    (tmp_path / "v41" / "loadgen" / "mlperf.conf").write_text("")   # v5.0 on: loadgen/mlperf.conf
    assert read_source(root).mlperf_conf == f"{root}/loadgen/mlperf.conf"


@pytest.mark.parametrize("version,reported,expected", [
    ("4.1", "", ""),                                          # built from source: an empty log is an error
    ("5.1.2", "", ""),
    ("4.1.30", "the LoadGen 4.1.30 wheel ignores ...; no compiler", "the LoadGen 4.1.30 wheel ignores ...; no compiler"),
    ("4.1.30", "", "--inference_source"),                     # verified later (--verify_only): the fix
])
def test_why_a_test06_run_logged_nothing(version, reported, expected):
    problem = not_verified_reason(version, reported)
    assert (expected in problem) if expected else problem == ""


def test_the_harness_accepts_a_build_of_the_rounds_source_only():
    assert loadgen_check(get_round("4.1"), "4.1", built_from_source=True) is None
    assert "4.1.12 .. 4.1.30" in loadgen_check(get_round("4.1"), "4.1")          # no mlperf.conf beside it
    assert loadgen_check(get_round("5.0"), "4.1", built_from_source=True)        # another round's source
    assert loadgen_check(get_round("4.1"), "4.1.30", built_from_source=True) is None


def test_the_conf_beside_the_loadgen_this_process_would_import(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "mlperf_loadgen", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mlperf_loadgen.py").write_text("")
    assert conf_beside_loadgen() == ""                        # a wheel: its mlperf.conf is inside
    (tmp_path / CONF_BESIDE).write_text("*.*.qsl_rng_seed = 1\n")
    assert conf_beside_loadgen() == str(tmp_path / CONF_BESIDE)


def test_a_build_of_the_same_files_for_the_same_interpreter_is_copied_not_compiled(tmp_path, monkeypatch):
    """build_kept: the store names a build by the source files' digest and the interpreter's ABI; the
    second site of the same source is a copy, another source is built, and no temporary folder stays."""
    from mlperf_llm.sysinfo import loadgen_src
    compiled = []

    def fake_build(python, source, site, timeout=3600):
        compiled.append(site)
        os.makedirs(site)
        open(os.path.join(site, "mlperf_loadgen.cpython.so"), "w").write(source.digest)

    monkeypatch.setattr(loadgen_src, "build", fake_build)
    monkeypatch.setattr(loadgen_src, "interpreter_abi", lambda python: "cpython-311-x86_64-linux-gnu")
    store = str(tmp_path / "builds")
    src = read_source(make_source(tmp_path / "a"))
    said = []
    assert loadgen_src.build_kept(sys.executable, src, str(tmp_path / "site1"), store, said.append) is False
    assert loadgen_src.build_kept(sys.executable, src, str(tmp_path / "site2"), store, said.append) is True
    assert len(compiled) == 1 and "was built before: copied from" in said[0]
    assert open(tmp_path / "site1" / "mlperf_loadgen.cpython.so").read() == src.digest
    assert open(tmp_path / "site2" / "mlperf_loadgen.cpython.so").read() == src.digest
    other = read_source(make_source(tmp_path / "b", {"loadgen/setup.py": "setup(2)", "loadgen/loadgen.cc": "int z;",
                                                     "mlperf.conf": ""}))
    assert loadgen_src.build_kept(sys.executable, other, str(tmp_path / "site3"), store) is False
    names = sorted(os.listdir(store))
    assert names == sorted(f"loadgen-{s.digest[:16]}-cpython-311-x86_64-linux-gnu" for s in (src, other))
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


def fake_abi_and_build(monkeypatch, compiled, abi="cpython-311-x86_64-linux-gnu"):
    from mlperf_llm.sysinfo import loadgen_src

    def fake_build(python, source, site, timeout=3600):
        compiled.append(site)
        os.makedirs(site)
        open(os.path.join(site, "mlperf_loadgen.cpython.so"), "w").write(source.digest)

    monkeypatch.setattr(loadgen_src, "build", fake_build)
    monkeypatch.setattr(loadgen_src, "interpreter_abi", lambda python: abi)
    return loadgen_src


def test_the_hosts_build_is_made_once_and_a_failed_one_leaves_nothing(tmp_path, monkeypatch):
    """--docker=chain: build_on_host builds v4.1's LoadGen into the store by keep_build (found the next
    time), nothing for a wheel that runs TEST06 itself, and says why where it cannot build."""
    compiled = []
    loadgen_src = fake_abi_and_build(monkeypatch, compiled)
    monkeypatch.setattr(loadgen_src, "missing_tools", no_tools_missing)
    source = make_source(tmp_path / "inference")
    store = str(tmp_path / "builds")
    built, problem = loadgen_src.build_on_host("4.1.30", source, sys.executable, store)
    digest = read_source(source).digest
    assert problem == "" and built == f"{store}/loadgen-{digest[:16]}-cpython-311-x86_64-linux-gnu"
    assert open(os.path.join(built, "mlperf_loadgen.cpython.so")).read() == digest
    assert loadgen_src.build_on_host("4.1.30", source, sys.executable, store) == (built, "") and len(compiled) == 1
    monkeypatch.setattr(loadgen_src, "missing_tools", lambda python: ["no C++ compiler"])   # kept: needs none
    assert loadgen_src.build_on_host("4.1.30", source, sys.executable, store) == (built, "") and len(compiled) == 1
    monkeypatch.setattr(loadgen_src, "missing_tools", no_tools_missing)
    assert loadgen_src.build_on_host("5.1.2", source, sys.executable, store) == ("", "")
    built, problem = loadgen_src.build_on_host("4.1.30", "", sys.executable, store)
    assert built == "" and "no mlcommons/inference source is at hand" in problem

    def failing(python, source, site, timeout=3600):
        os.makedirs(site)
        raise LoadgenBuildError(f"building LoadGen from {source.loadgen_dir} failed: pip said no")
    monkeypatch.setattr(loadgen_src, "build", failing)
    other = make_source(tmp_path / "other", {"loadgen/setup.py": "setup(2)", "mlperf.conf": ""})
    built, problem = loadgen_src.build_on_host("4.1.30", other, sys.executable, store)
    assert built == "" and problem.startswith("the LoadGen 4.1.30 wheel ignores") and "pip said no" in problem
    assert sorted(os.listdir(store)) == [os.path.basename(b) for b in
                                         [f"{store}/loadgen-{digest[:16]}-cpython-311-x86_64-linux-gnu"]]


def test_an_image_without_a_compiler_takes_the_hosts_build_of_the_same_files_for_its_abi(tmp_path, monkeypatch):
    """In --docker=chain's image (no compiler): for_test06 chooses the build where the host handed its
    build of these files for this ABI, without asking for tools; build_kept copies it, compiling
    nothing. A build for another ABI, or the host's reason, is named instead."""
    compiled = []
    loadgen_src = fake_abi_and_build(monkeypatch, compiled)
    source = make_source(tmp_path / "inference")
    host_store = str(tmp_path / "host-builds")
    given = loadgen_src.keep_build(sys.executable, read_source(source), host_store)[0]
    no_compiler = ["no C++ compiler (c++ is not on PATH; apt-get install g++)"]
    choice = for_test06("4.1.30", source, sys.executable, tools=lambda python: no_compiler, given=given)
    assert choice.problem == "" and choice.source is not None
    said = []
    site = str(tmp_path / "entry" / "site-src")
    assert loadgen_src.build_kept(sys.executable, choice.source, site, str(tmp_path / "image-builds"), said.append,
                                  given=given) is True
    assert len(compiled) == 1 and "built on the host: copied from " + given in said[0]
    assert open(os.path.join(site, "mlperf_loadgen.cpython.so")).read() == read_source(source).digest
    assert not os.path.exists(tmp_path / "image-builds")

    monkeypatch.setattr(loadgen_src, "interpreter_abi", lambda python: "cpython-312-x86_64-linux-gnu")
    choice = for_test06("4.1.30", source, sys.executable, tools=lambda python: no_compiler, given=given)
    assert choice.source is None and "no C++ compiler" in choice.problem
    assert f"the host's build {given} is not loadgen-" in choice.problem and "cpython-312" in choice.problem
    host = "the LoadGen 4.1.30 wheel ignores ...; no C++ compiler (c++ is not on PATH; apt-get install g++)"
    choice = for_test06("4.1.30", source, sys.executable, tools=lambda python: [], host_problem=host)
    assert choice.source is None and choice.problem.startswith(host) and "the host builds it" in choice.problem
