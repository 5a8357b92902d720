"""CM's daily flags on fixture repositories: --fake_run, --print_env, --print_deps, -s, --v,
--extra_cache_tags, inputs meant for a dependency, per-script --help, --out=json / -j / cmx,
and a hook written the cm4mlops way (os_info, automation.run_native_script)."""
import json

from enginefixtures import Runner, make_repo

MARK_SH = 'echo "$1" >> "$CM_MARKS"\n'


def marking(name, deps=(), cache=False, **extra):
    manifest = {"tags": [name], "cache": cache, "deps": [{"tags": d} for d in deps],
                "new_env_keys": ["CM_OUT_*"], **extra}
    files = {"run.sh": f'echo "{name} run" >> "$CM_MARKS"\necho "CM_OUT_{name.upper()}=done" > tmp-run-env.out\necho "{name} says hi"\n',
             "customize.py": f"""
                 import os

                 def preprocess(i):
                     with open(os.environ['CM_MARKS'], 'a') as f:
                         f.write('{name} preprocess\\n')
                     return {{'return': 0}}
                 """}
    return manifest, files


def setup(tmp_path, monkeypatch, scripts):
    marks = tmp_path / "marks"
    marks.write_text("")
    monkeypatch.setenv("CM_MARKS", str(marks))
    monkeypatch.chdir(tmp_path)
    runner = Runner([make_repo(str(tmp_path / "repos"), scripts)], str(tmp_path / "cache"))
    return runner, lambda: marks.read_text().splitlines()


def test_fake_run_runs_the_deps_but_not_the_top_steps_hooks_or_script(tmp_path, monkeypatch):
    top, files = marking("top", ["dep", "skipped"], cache=True)
    top["deps"][1]["skip_if_fake_run"] = True
    r, marks = setup(tmp_path, monkeypatch, {"top": (top, files), "dep": marking("dep"),
                                             "skipped": marking("skipped")})
    out = r.run("top", fake_run=True)
    assert out["return"] == 0, out
    assert marks() == ["dep preprocess", "dep run"]
    assert "fake run" in r.output and "skipped (skip_if_fake_run)" in r.output
    assert out["new_env"] == {"CM_OUT_DEP": "done"}
    out = r.run("top")       # nothing was cached by the fake run
    assert out["return"] == 0 and not out["cached"]
    assert "top run" in marks()


def test_print_env_print_deps_silent_and_verbose(tmp_path, monkeypatch):
    r, marks = setup(tmp_path, monkeypatch, {"top": marking("top", ["dep"]), "dep": marking("dep")})
    out = r.run("top", print_env=True, print_deps=True, env={"CM_SHOWN": "visible"})
    assert out["return"] == 0, out
    assert "env of top" in r.output and '"CM_SHOWN": "visible"' in r.output
    assert out["new_state"]["print_deps"] == ["cm run script dep --quiet"]
    out = r.run("top", s=True)
    assert "> top" not in r.output and "done:" not in r.output
    assert "top says hi" in r.output          # the script's own output stays
    out = r.run("top", v=True)
    assert "CM_OUT_DEP=done" in r.output


def test_extra_cache_tags_mark_the_entry(tmp_path, monkeypatch):
    top, files = marking("top", [], cache=True)
    top["deps"] = [{"tags": "dep", "extra_cache_tags": "from-dep"}]
    dep, dfiles = marking("dep", cache=True)
    r, _ = setup(tmp_path, monkeypatch, {"top": (top, files), "dep": (dep, dfiles)})
    out = r.run("top", extra_cache_tags="mine,ours")
    assert out["return"] == 0, out
    s = r.session()
    assert [e.alias for e in s.cache_matches({"tags": "mine,ours"})] == ["top"]
    assert [e.alias for e in s.cache_matches({"tags": "from-dep"})] == ["dep"]


def test_an_input_the_top_script_does_not_take_goes_to_the_dependency_that_does(tmp_path,
                                                                                monkeypatch):
    dep = ({"tags": ["get-py"], "input_mapping": {"python": "CM_PY"}, "new_env_keys": ["CM_PY"]},
           {})
    entry = ({"tags": ["dl"], "input_mapping": {"md5sum": "CM_MD5"}, "new_env_keys": ["CM_MD5"]},
             {})
    top = {"tags": ["top"], "deps": [{"tags": "get-py"}, {"tags": "dl", "md5sum": "abc"}],
           "new_env_keys": ["CM_PY", "CM_MD5"]}
    bad = {"tags": ["bad"], "deps": [{"tags": "dl", "sha": "x"}]}
    r, _ = setup(tmp_path, monkeypatch, {"top": top, "get-py": dep, "dl": entry, "bad": bad})
    out = r.run("top", python="/usr/bin/python3")
    assert out["return"] == 0, out
    assert out["new_env"] == {"CM_PY": "/usr/bin/python3", "CM_MD5": "abc"}
    out = r.run("top", pythn="x")
    assert out["return"] > 0 and "nor does any of its dependencies" in out["error"]
    assert "Did you mean: python" in out["error"]
    out = r.run("bad")
    assert out["return"] > 0 and "'sha', which is neither a dependency key nor an input" in out["error"]


def test_help_lists_inputs_variations_and_groups(tmp_path, monkeypatch):
    m = {"tags": ["get", "thing"], "input_mapping": {"model": "CM_MODEL"},
         "input_description": {"model": {"desc": "which model"}},
         "variations": {"fp16": {"group": "precision", "default": True}, "fp32": {"group": "precision"},
                        "batch.#": {}}}
    r, _ = setup(tmp_path, monkeypatch, {"thing": m})
    out = r.run("get,thing", help=True)
    assert out["return"] == 0 and out["skip_delayed_help"]
    for text in ("--model", "CM_MODEL", "which model", "group precision (default _fp16)",
                 "_fp32", "_batch.VALUE"):
        assert text in r.output, text
    from cmengine.plantext import LEGEND
    assert "The plan of a run (not printed here: add --dry-run, or use cm plan script): " + LEGEND in r.output


def test_json_output_is_clean_on_stdout(tmp_path, monkeypatch, capsys):
    r, _ = setup(tmp_path, monkeypatch, {"top": marking("top")})
    s = r.session()
    s.run({"action": "run", "tags": "top", "quiet": True, "j": True})
    captured = capsys.readouterr()
    assert json.loads(captured.out)["new_env"] == {"CM_OUT_TOP": "done"}   # only the JSON
    assert "top says hi" in captured.err
    for i in ({"out": "json"}, {"control": {"j": True}}):   # cmind prints the JSON itself
        s = r.session()
        res = s.run({"action": "run", "tags": "top", "quiet": True, **i})
        captured = capsys.readouterr()
        assert captured.out == "" and res["new_env"] == {"CM_OUT_TOP": "done"}
    res = r.session().run({"action": "run", "tags": "top", "quiet": True, "control": {"_input": {}}})
    assert res["return"] == 0           # cmx's control dict is not a script input


def test_a_hook_written_the_cm4mlops_way(tmp_path, monkeypatch):
    """os_info, recursion_spaces, run_script_input and automation.run_native_script, as
    upstream's get-* scripts use them."""
    files = {"customize.py": """
                 def preprocess(i):
                     env = i['env']
                     assert i['os_info']['platform'] in ('linux', 'darwin'), i['os_info']
                     assert i['recursion_spaces'].strip() == ''
                     r = i['automation'].run_native_script({'run_script_input': i['run_script_input'],
                                                            'env': env, 'script_name': 'probe'})
                     if r['return'] > 0:
                         return r
                     env['CM_SEEN'] = env['CM_PROBED'] + ' ' + i['os_info']['bits']
                     return {'return': 0}
                 """,
             "probe.sh": 'echo "CM_PROBED=yes" > tmp-run-env.out\n'}
    m = {"tags": ["upstreamish"], "new_env_keys": ["CM_SEEN"]}
    r, _ = setup(tmp_path, monkeypatch, {"upstreamish": (m, files)})
    out = r.run("upstreamish")
    assert out["return"] == 0, out
    assert out["new_env"]["CM_SEEN"] in ("yes 64", "yes 32")


def test_state_and_const_of_variations_reach_the_hooks(tmp_path, monkeypatch):
    """get-generic-sys-util keeps package names per OS in a variation's `state`;
    get-preprocessed-dataset-openimages sets `const` in a variation."""
    files = {"customize.py": """
                 def preprocess(i):
                     i['env']['CM_PKG'] = i['state']['tool']['apt'] + ' ' + i['env']['CM_Q']
                     return {'return': 0}
                 """}
    m = {"tags": ["sysutil"], "new_env_keys": ["CM_PKG"],
         "variations": {"tool": {"state": {"tool": {"apt": "tool-bin"}}},
                        "q.#": {"const": {"CM_Q": "#"}}}}
    r, _ = setup(tmp_path, monkeypatch, {"sysutil": (m, files)})
    out = r.run("sysutil,_tool,_q.7")
    assert out["return"] == 0, out
    assert out["new_env"] == {"CM_PKG": "tool-bin 7"}
