"""automation/cmind_hook.py: the pinned cmind version, the internals it relies on, its choices."""
import inspect
import sys
import types

import cmind
import cmind.automation
import cmind.artifact
import cmind.core
import pytest

import cmind_hook


def test_cmind_is_the_version_the_hook_was_written_for():
    assert cmind.__version__ == cmind_hook.CMIND_VERSION, (
        f"automation/cmind_hook.py patches internals of cmind {cmind_hook.CMIND_VERSION}; this "
        f"environment has cmind {cmind.__version__}. Check the shapes tested below against the new "
        "version's cmind/core.py and automation.py, then update CMIND_VERSION and setup.py's pin.")


@pytest.mark.parametrize("function, needles", [
    # CM.access and CM._x choose the automation with this exact call, then fail on several
    (cmind.core.CM.access, ["if self.cfg['flag_debug'] in i:", "r = cmind.cli.parse(i)",
                            "ii={'parsed_automation':[('automation','bbeb15d8f0a944a4')]",
                            "r = self.common_automation.search(ii)",
                            "ambiguity because several automations were found"]),
    (cmind.core.CM._x, ["ii={'parsed_automation':[('automation','bbeb15d8f0a944a4')]",
                        "r = self.common_automation.search(ii)"]),
    # the index is consulted unless skip_index_search; the walk loads the first artifact of a
    # folder to tell its automation and returns on any load error
    (cmind.automation.Automation.search, ["skip_index_search = i.get('skip_index_search', False)",
                                          "first_artifact = True",
                                          "r = artifact_object.load(ignore_inheritance = "
                                          "tmp_ignore_inheritance)\n                                "
                                          "if r['return']>0: return r"]),
    (cmind.artifact.Artifact.load, ["'Can\\'t load artifact meta in path {}: {}'"]),
])
def test_the_cmind_internals_the_hook_relies_on_are_there(function, needles):
    source = inspect.getsource(inspect.unwrap(function))
    for needle in needles:
        assert needle in source, f"cmind {cmind.__version__}: {function.__qualname__} changed"


def _artifact(repo_alias, repo_uid, alias="script", repo_path="/r", uid=""):
    return types.SimpleNamespace(repo_meta={"alias": repo_alias, "uid": repo_uid},
                                 repo_path=repo_path, meta={"alias": alias, "uid": uid})


UPSTREAM = ("mlcommons@cm4mlops", "9e97bb72b0474657")


def test_several_automations_give_ours_unless_an_enclosing_command_named_another():
    ours = _artifact("cm4mlperf-llm", cmind_hook.OUR_REPO_UID)
    theirs = _artifact(*UPSTREAM)
    assert cmind_hook.choose([theirs, ours]) == [ours]
    assert cmind_hook.choose([theirs, ours], preferred=UPSTREAM) == [theirs]
    # a preference for a repository without this automation falls back to ours
    assert cmind_hook.choose([theirs, ours], preferred=("local", "9a3280b14a4285c9")) == [ours]


def test_neither_ours_nor_preferred_leaves_the_ambiguity_to_cmind():
    a, b = _artifact("a", "1" * 16), _artifact("b", "2" * 16)
    assert cmind_hook.choose([a, b]) == [a, b]


def test_two_registered_copies_of_ours_pick_the_one_holding_the_running_hook():
    elsewhere = _artifact("cm4mlperf-llm", cmind_hook.OUR_REPO_UID, repo_path="/somewhere/else")
    here = _artifact("cm4mlperf-llm", cmind_hook.OUR_REPO_UID, repo_path=cmind_hook._ROOT)
    assert cmind_hook.choose([elsewhere, here]) == [here]


def test_under_a_named_engine_its_repository_shadows_scripts_of_the_same_alias():
    ours = _artifact("cm4mlperf-llm", cmind_hook.OUR_REPO_UID, alias="detect-os", uid="863735b7db8c44fc")
    theirs = _artifact(*UPSTREAM, alias="detect-os", uid="863735b7db8c44fc")
    only_ours = _artifact("cm4mlperf-llm", cmind_hook.OUR_REPO_UID, alias="install-vllm")
    assert cmind_hook.prefer_repo([ours, theirs, only_ours], UPSTREAM) == [theirs, only_ours]


def test_dry_run_naming_an_upstream_script_automation_is_refused():
    theirs = _artifact(*UPSTREAM)
    r = cmind_hook._refuse_unknown_plan(theirs, {"dry_run": True})
    assert r["return"] == 2 and "would run for real" in r["error"] and "cm run script" in r["error"]
    assert cmind_hook._refuse_unknown_plan(theirs, {}) is None
    ours = _artifact("cm4mlperf-llm", cmind_hook.OUR_REPO_UID)
    assert cmind_hook._refuse_unknown_plan(ours, {"dry_run": True}) is None


def test_another_cmind_version_leaves_cmind_alone_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(sys.modules["cmind"], "__version__", "9.9.9")
    fake_core = types.SimpleNamespace(CM=type("CM", (), {"access": None, "x": None}))
    assert cmind_hook.patch(fake_core) is False
    assert fake_core.CM.access is None
    err = capsys.readouterr().err
    assert "cmind 4.2.0, not 9.9.9" in err and "pip install cmind==4.2.0" in err


def test_the_finder_only_answers_for_cmind_core():
    assert cmind_hook.find_spec("json") is None
    spec = cmind_hook.find_spec("cmind.core", cmind.__path__)   # as the import system calls it
    assert spec is not None and spec.origin == cmind.core.__file__
    assert isinstance(spec.loader, cmind_hook._Loader)
