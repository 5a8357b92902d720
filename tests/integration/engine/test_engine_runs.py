"""The engine on small fixture repositories: chains, sharing, cycles, variations, adr, caching."""
import json
import os

import pytest

from enginefixtures import Runner, make_repo

COUNT_SH = 'echo run >> "$COUNTER_FILE"\necho "CM_OUT_{name}=$CM_IN_{name}" > tmp-run-env.out\n'


def counting(name, deps=(), cache=True, **extra):
    manifest = {"tags": [name], "cache": cache, "deps": [{"tags": d} for d in deps],
                "default_env": {f"CM_IN_{name.upper()}": "v"},
                "new_env_keys": ["CM_OUT_*"], **extra}
    return manifest, {"run.sh": COUNT_SH.replace("{name}", name.upper())
                      .replace("$COUNTER_FILE", f"$CM_COUNTER_DIR/{name}")}


@pytest.fixture
def env_counter(tmp_path, monkeypatch):
    d = tmp_path / "counts"
    d.mkdir()
    monkeypatch.setenv("CM_COUNTER_DIR", str(d))

    def count(name):
        p = d / name
        return len(p.read_text().splitlines()) if p.exists() else 0
    return count


def runner(tmp_path, scripts):
    return Runner([make_repo(str(tmp_path / "repos"), scripts)], str(tmp_path / "cache"))


def test_chain_runs_then_comes_from_cache(tmp_path, env_counter):
    r = runner(tmp_path, {"a": counting("a", ["b"]), "b": counting("b", ["c"]), "c": counting("c")})
    out = r.run("a")
    assert out["return"] == 0, out
    assert out["new_env"]["CM_OUT_A"] == "v" and out["new_env"]["CM_OUT_C"] == "v"
    assert [env_counter(n) for n in "abc"] == [1, 1, 1]
    again = r.run("a")
    assert again["return"] == 0 and again["cached"] is True
    assert [env_counter(n) for n in "abc"] == [1, 1, 1]
    assert again["new_env"] == out["new_env"]


def test_diamond_shares_the_common_node(tmp_path, env_counter):
    r = runner(tmp_path, {"top": counting("top", ["left", "right"]),
                          "left": counting("left", ["base"]), "right": counting("right", ["base"]),
                          "base": counting("base", cache=False)})
    assert r.run("top")["return"] == 0
    assert env_counter("base") == 1


def test_cycle_is_reported_as_a_chain(tmp_path):
    r = runner(tmp_path, {"a": {"tags": ["a"], "deps": [{"tags": "b"}]},
                          "b": {"tags": ["b"], "deps": [{"tags": "a"}]}})
    out = r.run("a")
    assert out["return"] != 0 and "dependency cycle: a -> b -> a" in out["error"]


def test_edited_script_invalidates_its_entry_and_its_dependents(tmp_path, env_counter):
    r = runner(tmp_path, {"a": counting("a", ["b"]), "b": counting("b")})
    r.run("a")
    sh = os.path.join(r.repos[0].path, "script", "b", "run.sh")
    with open(sh, "a") as f:
        f.write("# edited\n")
    plan = r.plan("a")
    verdicts = {p["script"]: p for p in plan["plan"]}
    assert verdicts["b"]["verdict"] == "run"
    assert "the step's code: changed run.sh" in verdicts["b"]["reason"]
    assert r.run("a")["return"] == 0
    assert env_counter("b") == 2 and env_counter("a") == 2


def test_changed_input_makes_a_new_entry_and_old_one_is_reused(tmp_path, env_counter):
    m, files = counting("a")
    m["input_mapping"] = {"size": "CM_IN_A"}
    r = runner(tmp_path, {"a": (m, files)})
    assert r.run("a", size="1")["new_env"]["CM_OUT_A"] == "1"
    assert r.run("a", size="2")["new_env"]["CM_OUT_A"] == "2"
    assert r.run("a", size="1")["cached"] is True
    assert env_counter("a") == 2
    reason = [p for p in r.plan("a", size="3")["plan"] if p["script"] == "a"][0]["reason"]
    assert "CM_IN_A" in reason


def test_unknown_input_is_refused_with_a_suggestion(tmp_path):
    m, files = counting("a")
    m["input_mapping"] = {"size": "CM_IN_A"}
    out = runner(tmp_path, {"a": (m, files)}).run("a", sise="1")
    assert out["return"] == 2 and "--sise" in out["error"] and "Did you mean: size" in out["error"]


def test_variation_groups_defaults_and_dynamic(tmp_path):
    m = {"tags": ["v"], "cache": False, "new_env_keys": ["CM_*"],
         "variations": {"cpu": {"group": "device", "default": True, "env": {"CM_DEV": "cpu"}},
                        "cuda": {"group": "device", "env": {"CM_DEV": "cuda"}},
                        "size.#": {"env": {"CM_SIZE": "#"}}}}
    r = runner(tmp_path, {"v": m})
    assert r.run("v")["new_env"]["CM_DEV"] == "cpu"
    out = r.run("v,_cuda,_size.7")
    assert out["new_env"]["CM_DEV"] == "cuda" and out["new_env"]["CM_SIZE"] == "7"
    bad = r.run("v,_cuda,_cpu")
    assert bad["return"] == 2 and "group 'device'" in bad["error"]


def test_adr_adds_tags_recursively_to_named_deps(tmp_path):
    leaf = {"tags": ["leaf"], "cache": False, "new_env_keys": ["CM_LEAF"],
            "variations": {"x": {"env": {"CM_LEAF": "x"}}, "y": {"env": {"CM_LEAF": "y"}}},
            "default_env": {"CM_LEAF": "plain"}}
    mid = {"tags": ["mid"], "cache": False, "deps": [{"tags": "leaf", "names": ["the-leaf"]}],
           "new_env_keys": ["CM_LEAF"]}
    top = {"tags": ["top"], "cache": False, "deps": [{"tags": "mid"}], "new_env_keys": ["CM_LEAF"]}
    r = runner(tmp_path, {"leaf": leaf, "mid": mid, "top": top})
    assert r.run("top")["new_env"]["CM_LEAF"] == "plain"
    assert r.run("top", adr={"the-leaf": {"tags": "_y"}})["new_env"]["CM_LEAF"] == "y"


def test_conditions_skip_and_runtime_decision(tmp_path, env_counter):
    producer = ({"tags": ["producer"], "cache": False, "new_env_keys": ["CM_FLAG"]},
                {"run.sh": "echo CM_FLAG=on > tmp-run-env.out\n"})
    top = {"tags": ["top"], "cache": False, "deps": [
        {"tags": "producer"},
        {"tags": "b", "enable_if_env": {"CM_FLAG": ["yes"]}},
        {"tags": "c", "enable_if_env": {"CM_STATIC": ["yes"]}}]}
    r = runner(tmp_path, {"producer": producer, "top": top, "b": counting("b", cache=False),
                          "c": counting("c", cache=False)})
    plan = r.plan("top")["plan"]
    assert "c" not in [p["script"] for p in plan]       # decided statically: skipped
    assert r.run("top")["return"] == 0
    assert env_counter("b") == 1 and env_counter("c") == 0


def test_failing_run_sh_reports_status_log_and_rerun(tmp_path):
    r = runner(tmp_path, {"bad": ({"tags": ["bad"]}, {"run.sh": "echo preparing\necho oops >&2\nexit 3\n"})})
    out = r.run("bad")
    assert out["return"] == 1
    err = out["error"]
    assert "exited with code 3" in err and "oops" in err and "bad.log" in err
    assert "cm run script bad" in err
    assert "35072" not in err


def test_killed_run_sh_names_the_signal(tmp_path):
    r = runner(tmp_path, {"k": ({"tags": ["k"]}, {"run.sh": "kill -KILL $$\n"})})
    out = r.run("k")
    assert "killed by SIGKILL" in out["error"]


def test_hook_exception_names_file_and_line(tmp_path):
    r = runner(tmp_path, {"h": ({"tags": ["h"]}, {"customize.py": """
        def preprocess(i):
            x = 1
            raise ValueError("bad value for CM_X")
        """})})
    out = r.run("h")
    assert out["return"] == 1
    assert "customize.py:3" in out["error"] and "ValueError: bad value for CM_X" in out["error"]
    assert "Traceback" not in out["error"]


def test_hook_error_return_is_reported(tmp_path):
    r = runner(tmp_path, {"h": ({"tags": ["h"]}, {"customize.py": """
        def preprocess(i):
            return {'return': 1, 'error': 'input --model is missing: pass --model=NAME'}
        """})})
    out = r.run("h")
    assert "input --model is missing" in out["error"]


def test_failed_build_publishes_nothing(tmp_path):
    r = runner(tmp_path, {"f": ({"tags": ["f"], "cache": True},
                                {"run.sh": "echo partial > data.bin\nexit 1\n"})})
    assert r.run("f")["return"] != 0
    entries = os.path.join(str(tmp_path / "cache"), "entries")
    assert not os.path.isdir(entries) or os.listdir(entries) == []


def test_a_result_its_hook_asks_not_to_keep_is_used_then_dropped_and_rebuilt_next_time(tmp_path, env_counter):
    m, files = counting("fb")
    files = dict(files, **{"customize.py": """
def preprocess(i):
    return {'return': 0, 'cache': False, 'reason': 'a fallback for an override that could not be had'}
"""})
    r = runner(tmp_path, {"top": counting("top", ["fb"]), "fb": (m, files)})
    out = r.run("top")
    assert out["return"] == 0 and out["new_env"]["CM_OUT_FB"] == "v"      # the run used it
    assert "fb: not kept in the cache (a fallback for an override that could not be had)" in r.output
    store = tmp_path / "cache" / "store"
    assert not [n for n in os.listdir(store) if n.startswith("fb-")]        # its folder is gone
    assert "top: not kept in the cache (it used fb, which was not kept)" in r.output   # built on it
    entries = tmp_path / "cache" / "entries"
    assert not entries.exists() or os.listdir(entries) == []
    assert r.run("top")["return"] == 0
    assert env_counter("fb") == 2 and env_counter("top") == 2                # tried again


def test_unknown_tag_suggests(tmp_path):
    r = runner(tmp_path, {"detect-os": {"tags": ["detect", "os"]}})
    out = r.run("detect,oss")
    assert out["return"] == 16 and "Did you mean: os" in out["error"]


def test_ambiguous_tags_list_candidates(tmp_path):
    r = runner(tmp_path, {"one": {"tags": ["get", "x", "one"]}, "two": {"tags": ["get", "x", "two"]}})
    out = r.run("get,x")
    assert out["return"] == 2 and "one" in out["error"] and "two" in out["error"]
    assert "cm run script" in out["error"]


def test_state_and_tmp_run_state(tmp_path):
    m = {"tags": ["s"], "cache": True, "new_state_keys": ["info"]}
    r = runner(tmp_path, {"s": (m, {"run.sh": 'echo \'{"info": {"n": 3}}\' > tmp-run-state.json\n'})})
    assert r.run("s")["new_state"] == {"info": {"n": 3}}
    assert r.run("s")["new_state"] == {"info": {"n": 3}}


def test_state_is_the_same_plain_json_run_or_replayed(tmp_path, capsys):
    """A step's state reaches its caller as the JSON its cache entry replays, on the first run too."""
    hook = "def preprocess(i):\n    i['state']['info'] = {'pair': (1, 2), 3: 'x'}\n    return {'return': 0}\n"
    top = ({"tags": ["top"], "cache": False, "deps": [{"tags": "s"}], "new_state_keys": ["info"]},
           {"customize.py": "def postprocess(i):\n    info = i['state']['info']\n"
                             "    print('TOP SAW', type(info['pair']).__name__, '3' in info)\n"})
    r = runner(tmp_path, {"top": top, "s": ({"tags": ["s"], "cache": True, "new_state_keys": ["info"]},
                                            {"customize.py": hook})})
    first = r.run("top")
    assert first["return"] == 0, first
    assert "TOP SAW list True" in capsys.readouterr().out
    again = r.run("top")
    assert again["new_state"] == first["new_state"] == {"info": {"pair": [1, 2], "3": "x"}}
    assert "TOP SAW list True" in capsys.readouterr().out


def test_state_that_is_not_json_is_refused_with_its_step_and_key(tmp_path):
    hook = "def preprocess(i):\n    i['state']['info'] = object()\n    return {'return': 0}\n"
    r = runner(tmp_path, {"s": ({"tags": ["s"], "cache": True, "new_state_keys": ["info"]},
                                {"customize.py": hook})})
    out = r.run("s")
    assert out["return"] != 0
    assert "s: state['info'] cannot be handed on" in out["error"] and "plain JSON" in out["error"]
    assert not os.path.isdir(tmp_path / "cache" / "entries") or not os.listdir(tmp_path / "cache" / "entries")


def test_a_failed_step_hands_its_state_to_a_caller_that_continues_on_error(tmp_path, capsys):
    """A checker that finds errors fails, and its caller (which goes on without it) still gets
    the verdict it recorded; a caller that does not continue fails as before."""
    check = "def preprocess(i):\n    i['state']['verdict'] = {'v': 'FAIL'}\n    return {'return': 1, 'error': '2 errors'}\n"
    show = "def postprocess(i):\n    print('VERDICT', i['state'].get('verdict'))\n"
    scripts = {
        "app": ({"tags": ["app"], "deps": [{"tags": "check", "continue_on_error": True}],
                 "new_state_keys": ["verdict"]}, {"customize.py": show}),
        "strict": ({"tags": ["strict"], "deps": [{"tags": "check"}]}, {"customize.py": show}),
        "check": ({"tags": ["check"], "new_state_keys": ["verdict"]}, {"customize.py": check})}
    r = runner(tmp_path, scripts)
    out = r.run("app")
    assert out["return"] == 0, out
    assert "VERDICT {'v': 'FAIL'}" in capsys.readouterr().out and out["new_state"] == {"verdict": {"v": "FAIL"}}
    out = r.run("strict")
    assert out["return"] != 0 and "check: 2 errors" in out["error"]


def test_secret_never_written_to_entry(tmp_path):
    m = {"tags": ["s"], "cache": True, "new_env_keys": ["*"], "input_mapping": {"token": "HF_TOKEN"}}
    r = runner(tmp_path, {"s": m})
    assert r.run("s", token="hf_supersecret")["return"] == 0
    for root, _, files in os.walk(str(tmp_path / "cache")):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                assert b"hf_supersecret" not in open(p, "rb").read(), p


def test_token_counts_tokenizers_and_token_ids_survive_a_cached_replay(tmp_path):
    # the secret rule is cmcontract/secret.py: a name holding TOKEN is a secret, but not a count,
    # a tokenizer or an id; a cached replay hands back every output but the secret
    outputs = {"CM_DATASET_MAX_NEW_TOKENS": "1024", "CM_X_TOKENIZER_PATH": "/t", "CM_X_EOS_TOKEN_ID": "2",
               "CM_X_TOKEN_IDS": "yes", "CM_X_HF_TOKEN": "hf_supersecret"}
    run_sh = "".join(f'echo "{k}={v}" >> tmp-run-env.out\n' for k, v in outputs.items())
    r = runner(tmp_path, {"t": ({"tags": ["t"], "cache": True, "new_env_keys": sorted(outputs)},
                                {"run.sh": run_sh})})
    fresh = r.run("t")
    assert fresh["return"] == 0 and fresh["new_env"] == outputs, fresh
    again = r.run("t")
    assert again["cached"] is True
    assert again["new_env"] == {k: v for k, v in outputs.items() if k != "CM_X_HF_TOKEN"}


def test_each_step_record_carries_a_digest_its_cached_replay_matches(tmp_path):
    # the `steps` log (what a record keeps): every step of a chain, fresh then cached, passes on the
    # same env and state, and says so by one digest; an output the cache dropped would change it
    r = runner(tmp_path, {
        "top": ({"tags": ["top"], "cache": True, "deps": [{"tags": "mid"}], "new_env_keys": ["CM_TOP"]},
                {"run.sh": 'echo "CM_TOP=$CM_MID_MAX_NEW_TOKENS" > tmp-run-env.out\n'}),
        "mid": ({"tags": ["mid"], "cache": True, "new_env_keys": ["CM_MID_MAX_NEW_TOKENS", "CM_MID_HF_TOKEN"]},
                {"run.sh": 'printf "CM_MID_MAX_NEW_TOKENS=128\\nCM_MID_HF_TOKEN=hf_x\\n" > tmp-run-env.out\n'})})
    fresh = r.run("top")
    again, mid = r.run("top"), r.run("mid")      # a cached step does not replay its dependencies
    assert fresh["return"] == again["return"] == mid["return"] == 0
    first = {s["script"]: s for s in fresh["steps"]}
    second = {s["script"]: s for s in again["steps"] + mid["steps"]}
    assert set(first) == set(second) == {"top", "mid"}
    for name in first:
        assert (first[name]["cached"], second[name]["cached"]) == (False, True), name
        assert len(first[name]["outputs_sha256"]) == 64
        assert first[name]["outputs_sha256"] == second[name]["outputs_sha256"], name
    assert again["new_env"]["CM_TOP"] == "128"


def test_corrupt_entry_is_evicted_with_warning(tmp_path, capsys):
    r = runner(tmp_path, {"c": {"tags": ["c"], "cache": True}})
    r.run("c")
    entries = os.path.join(str(tmp_path / "cache"), "entries")
    (key,) = os.listdir(entries)
    meta = os.path.join(os.path.realpath(os.path.join(entries, key)), "cm-entry.json")
    with open(meta, "w") as f:
        f.write("{broken")
    out = r.run("c")
    assert out["return"] == 0 and out["cached"] is False
    assert "evicting a corrupt cache entry" in capsys.readouterr().err


def test_adr_that_matches_nothing_is_noted(tmp_path, capsys):
    r = runner(tmp_path, {"a": {"tags": ["a"], "deps": [{"tags": "b", "names": ["bee"]}]},
                          "b": {"tags": ["b"]}})
    assert r.run("a", adr={"be": {"tags": "_x"}})["return"] == 0
    err = capsys.readouterr().err
    assert "--adr.be matched no dependency" in err and "Did you mean: bee" in err


def test_cleanup_hooks_run_after_a_failure_newest_first(tmp_path, monkeypatch):
    monkeypatch.setenv("CM_MARK", str(tmp_path / "marks"))
    hook = """
        import os
        def preprocess(i):
            return {{'return': 0}}
        def cleanup(i):
            with open(os.environ['CM_MARK'], 'a') as f:
                f.write('{name}\\n')
        """
    r = runner(tmp_path, {
        "top": ({"tags": ["top"], "deps": [{"tags": "server"}, {"tags": "client"}, {"tags": "bench"}]}, {}),
        "server": ({"tags": ["server"]}, {"customize.py": hook.format(name="server")}),
        "client": ({"tags": ["client"]}, {"customize.py": hook.format(name="client")}),
        "bench": ({"tags": ["bench"]}, {"run.sh": "exit 4\n"})})
    out = r.run("top")
    assert "exited with code 4" in out["error"]
    assert (tmp_path / "marks").read_text().split() == ["client", "server"]


def test_validate_hooks_stop_the_run_before_anything_runs(tmp_path, env_counter):
    top = ({"tags": ["top"], "deps": [{"tags": "a"}], "input_mapping": {"model": "CM_MODEL"}},
           {"customize.py": """
        def validate(i):
            if i['env'].get('CM_MODEL') not in ('llama2-70b-99', 'llama2-70b-99.9'):
                return {'return': 1, 'error': f"--model={i['env'].get('CM_MODEL')} is not a llama2-70b "
                        "benchmark; use --model=llama2-70b-99 or --model=llama2-70b-99.9"}
            return {'return': 0}
        """})
    r = runner(tmp_path, {"top": top, "a": counting("a")})
    out = r.run("top", model="gpt-j")
    assert out["return"] == 2 and "--model=gpt-j is not a llama2-70b" in out["error"]
    assert env_counter("a") == 0
    assert r.plan("top", model="gpt-j")["return"] == 2
    assert r.run("top", model="llama2-70b-99")["return"] == 0 and env_counter("a") == 1


def test_the_top_steps_validate_settles_a_default_variation(tmp_path, env_counter):
    """A default that depends on an input (the round from --model): validate names the variation,
    the run is planned again as if it had been asked for, and the note is printed with the plan."""
    top = ({"tags": ["top"], "input_mapping": {"model": "CM_MODEL"}, "new_env_keys": ["CM_OUT_*"],
            "deps": [{"tags": "a", "update_tags_from_env_with_prefix": {"_r": ["CM_ROUND"]}}],
            "variations": {"r1": {"group": "round", "env": {"CM_ROUND": "1"}},
                           "r2": {"group": "round", "env": {"CM_ROUND": "2"}}}},
           {"customize.py": """
        def validate(i):
            if i['env'].get('CM_ROUND'):
                return {'return': 0}
            pick = 'r1' if i['env'].get('CM_MODEL') == 'old' else 'r2'
            return {'return': 0, 'variations': [pick], 'note': f'{pick}: the newest round with the model'}
        """})
    a = ({"tags": ["a"], "variations": {"r1": {"env": {"CM_IN_A": "one"}}, "r2": {"env": {"CM_IN_A": "two"}}},
          "new_env_keys": ["CM_OUT_*"]}, {"run.sh": 'echo "CM_OUT_A=$CM_IN_A" > tmp-run-env.out\n'})
    r = runner(tmp_path, {"top": top, "a": a})
    out = r.run("top", model="old")
    assert out["return"] == 0 and out["new_env"]["CM_OUT_A"] == "one"
    out = r.run("top", model="new")
    assert out["new_env"]["CM_OUT_A"] == "two"
    assert r.run("top,_r1", model="new")["new_env"]["CM_OUT_A"] == "one"        # asked for: kept
    plan = r.plan("top", model="new")
    assert plan["return"] == 0 and "Plan for 'top _r2'" in r.output


def test_the_top_steps_validate_settles_env_that_chooses_a_dependency(tmp_path, env_counter):
    """A dependency chosen from an input (a benchmark's data set step): validate returns the env that
    names its tags, the run is planned again with it; the dependency is skipped in the first plan
    (the env is not known there), an env value given with --env.* is kept, and the record of what
    was asked for does not hold the settled value."""
    top = ({"tags": ["top"], "input_mapping": {"model": "CM_MODEL"}, "new_env_keys": ["CM_OUT_*"],
            "deps": [{"tags": "data", "update_tags_from_env": ["CM_DATA_TAGS"],
                      "skip_if_env": {"CM_DATA_TAGS": [""]}}]},
           {"customize.py": """
        def validate(i):
            return {'return': 0, 'env': {'CM_DATA_TAGS': 'data,' + ('orca' if i['env'].get('CM_MODEL') == 'l2' else 'cnn')}}
        """})

    def data(name):
        return ({"tags": ["data", name], "new_env_keys": ["CM_OUT_*"]},
                {"run.sh": f'echo "CM_OUT_DATA={name}" > tmp-run-env.out\n'})
    r = runner(tmp_path, {"top": top, "orca": data("orca"), "cnn": data("cnn")})
    assert r.run("top", model="l2")["new_env"]["CM_OUT_DATA"] == "orca"
    assert r.run("top", model="l3")["new_env"]["CM_OUT_DATA"] == "cnn"
    assert r.run("top", model="l3", env={"CM_DATA_TAGS": "data,orca"})["new_env"]["CM_OUT_DATA"] == "orca"
    s = r.session()
    plan = s.plan({"action": "run", "tags": "top", "model": "l3", "quiet": True})
    assert plan.request.settled_env == {"CM_DATA_TAGS": "data,cnn"} and "CM_DATA_TAGS" not in plan.request.env


def test_new_and_renew_rebuild_existing_entries(tmp_path, env_counter):
    r = runner(tmp_path, {"a": counting("a", ["b"]), "b": counting("b")})
    r.run("a")
    out = r.run("a", new=True)
    assert out["return"] == 0 and out["cached"] is False
    assert env_counter("a") == 2 and env_counter("b") == 1      # --new: the top step only
    assert r.run("a", renew=True)["return"] == 0
    assert env_counter("a") == 3 and env_counter("b") == 2      # --renew: every cached step
    assert r.run("a")["cached"] is True


def test_run_cwd_reaches_the_steps_at_run_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    m = {"tags": ["w"], "default_env": {"CM_OUT_DIR": "<<<CM_RUN_CWD>>>/results"}, "new_env_keys": ["CM_OUT_DIR"]}
    out = runner(tmp_path, {"w": (m, {"run.sh": 'echo "CM_OUT_DIR=$CM_OUT_DIR" > tmp-run-env.out\n'})}).run("w")
    assert out["new_env"]["CM_OUT_DIR"] == f"{tmp_path}/results"


def test_a_hook_is_handed_the_request_as_typed_and_its_path_inputs_absolute(tmp_path, monkeypatch):
    """What a hook that runs the request again elsewhere (--docker=chain's host step) reads: the
    inputs as typed, and beside them the ones naming files or folders (path_inputs) as the steps got
    them, absolute from the folder cm was started in, a bare name too."""
    hook = ("import json, os\n"
            "def preprocess(i):\n"
            "    with open(os.environ['REQUEST_OUT'], 'w') as f:\n"
            "        json.dump(i['request'], f)\n"
            "    return {'return': 0}\n")
    r = runner(tmp_path, {"app": ({"tags": ["app"], "input_mapping": {"sut": "CM_SUT", "label": "CM_LABEL"},
                                   "path_inputs": ["sut"]}, {"customize.py": hook})})
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("REQUEST_OUT", str(tmp_path / "request.json"))
    assert r.run("app", sut="sut.json", label="sut.json")["return"] == 0, r.output
    request = json.loads((tmp_path / "request.json").read_text())
    assert request["inputs"] == {"sut": "sut.json", "label": "sut.json"}
    assert request["paths"] == {"sut": str(tmp_path / "work" / "sut.json")}
