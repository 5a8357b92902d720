"""A submission of this tool's whose reproduction record is gone (deleted, or made by a version that
wrote none): its replay is planned from what its measurement READMEs say instead (docs/reproduce.md).

Each measurement README of ours holds the command that made the run (paths of the submitting machine
left out), and the cache key of every step it used. The replay runs that command here, with the
round the results page names and the targets LoadGen logged in user.conf, into the replay's own
folders; afterwards the replay's own record gives its cache keys, and a key that differs says which
step's inputs were not the same (a cache key is computed from what the step depends on)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..harness.testsizes import NAME as SIZES_NAME, format_sizes, key as size_key
from ..harness.userconf import TARGET_INPUTS
from ..published.commands import Command
from ..published.reader import PublishedResult, PublishedTest
from .capture import PROJECT
from .compare import REPLAY_PATHS, Difference, size_anew_note
from . import trust
from .record import Record

APP_TAGS = ("run-mlperf", "inference")
# steps whose inputs decide what the model answers: a different key there can change accuracy
ANSWER_STEPS = ("get-ml-model-", "quantize-ml-model", "get-preprocessed-dataset-", "get-dataset-",
                "install-vllm", "run-vllm-server", "app-mlperf-inference", "process-mlperf-accuracy")
# (the harness and scoring steps are keyed on the run's results folder: cache_key_differences names
# them as not compared when it is given the replay's folders)


class ReadmeReplayError(Exception):
    """The READMEs do not say enough for a replay: what is missing and what to do."""


@dataclass
class ReadmePlan:
    command: Command
    tests: list[PublishedTest]
    request: dict                                       # for run_script, without the replay's folders
    fixed: list[str] = field(default_factory=list)      # what the READMEs' command left to the run, given here
    cache_keys: dict = field(default_factory=dict)      # step -> key, as the READMEs list them
    sizes: dict = field(default_factory=dict)           # "Scenario/kind" -> the size its logs say (test runs)


def own_tests(result: PublishedResult) -> list[PublishedTest]:
    """The tests whose measurement README says this tool made them and records its command."""
    return [t for t in result.tests if t.generator == PROJECT and t.made_with is not None and t.made_with.kind == "cm"]


def plan_from_readme(result: PublishedResult, inference_src: str = "", size_anew: bool = False,
                     trust_record: bool = False) -> ReadmePlan:
    tests = own_tests(result)
    if not tests:
        raise ReadmeReplayError(f"no measurement README in {result.root} says it was made by {PROJECT} with "
                                "a `cm run script` command")
    commands = sorted({t.made_with.text for t in tests})
    if len(commands) > 1:
        raise ReadmeReplayError("its measurement READMEs record different commands (one run makes every test "
                                "of a submission): " + " | ".join(commands) + "; replay each test by hand")
    command = tests[0].made_with
    tags = command.tags()
    if tuple(t for t in tags[:2]) != APP_TAGS:
        raise ReadmeReplayError(f"its recorded command is not this tool's main command (--tags="
                                f"{','.join(tags)}): replay it by hand")
    options = {k: v for k, v in command.options().items() if k not in ("tags", "quiet", *REPLAY_PATHS)}
    env = {k[len("env."):]: v for k, v in options.items() if k.startswith("env.")}
    adr: dict = {}
    for k, v in options.items():
        if k.startswith("adr.") and k.count(".") == 2:
            adr.setdefault(k.split(".")[1], {})[k.split(".")[2]] = v
        elif k.startswith("adr."):
            adr.setdefault(k, {})["?"] = v            # not name.key: refused as it stands
    asked = trust.screen(tags, {k: v for k, v in options.items() if not k.startswith(("env.", "adr."))}, env, adr,
                         trusted=trust_record)
    if asked.untrusted and not trust_record:
        raise ReadmeReplayError(asked.refusal().replace("the record asks", "its recorded command asks"))
    tags, options, env, adr = asked.tags, asked.inputs, asked.env, asked.adr
    request = {"tags": ",".join(tags), "quiet": True, **options}
    if env:
        request["env"] = env
    if adr:
        request["adr"] = adr
    fixed = [] if not asked.untrusted else [f"--{trust.FLAG}=yes: replayed as its command asks, including: "
                                            + "; ".join(asked.untrusted)]
    rounds = sorted({t.round for t in tests if t.round})
    if not any(t.startswith("_r") and t[2:3].isdigit() for t in tags) and len(rounds) == 1:
        request["tags"] += f",_r{rounds[0]}"
        fixed.append(f"_r{rounds[0]}: the round read from {tests[0].round_source} (the command gave none, so "
                     "the run took the newest round it knew then)")
    for t in tests:
        name = TARGET_INPUTS.get(t.scenario)
        key = "target_latency" if t.scenario == "SingleStream" else "target_qps"
        value = next((v for k, v in t.user_conf.items() if k.endswith(f".{t.scenario}.{key}")), None)
        if name and name not in request and value not in (None, ""):
            request[name] = value
            fixed.append(f"--{name}={value}: from {t.scenario}'s user.conf (the run chose it itself), so "
                         "both runs measure at the same load")
    sizes = {size_key(t.scenario, kind): n for t in tests for kind, n in sorted(t.sizes.items())}
    if sizes and str(request.get("execution_mode", "test")) == "test" and SIZES_NAME not in request:
        if size_anew:
            fixed.append(size_anew_note(sizes))
        else:
            request[SIZES_NAME] = format_sizes(sizes)
            fixed.append(f"--{SIZES_NAME}={request[SIZES_NAME]}: the size of each test, read from its LoadGen logs "
                         "(the run sized its tests to its host), so that each accuracy test scores the same "
                         "samples; nothing is sized again (--size_anew=yes sizes them to this host instead)")
    if inference_src:
        request["inference_src"] = inference_src
    keys = {}
    for t in tests:
        for step, key in t.cache_keys.items():
            keys.setdefault(step, key)
    return ReadmePlan(command, tests, request, fixed, keys, sizes if str(request.get("execution_mode", "test")) == "test"
                      else {})


def cache_key_differences(published: dict, here: Record | None,
                          own_folders: tuple[str, ...] = ()) -> tuple[list[Difference], list[str]]:
    """Per step the READMEs list, the replay's cache key against the published one: the differences,
    and the steps whose keys cannot be compared because they hold the replay's own folders (the
    harness, scoring and compliance steps are keyed on --results_dir, which a replay never shares).
    A step that ran more than once in one run (several keys) matches when the README's key is among them."""
    if here is None:
        return [], []
    mine: dict[str, list[dict]] = {}
    for step in here.steps or []:
        if isinstance(step, dict) and step.get("script") and step.get("key"):
            mine.setdefault(step["script"], []).append(step)
    out, incomparable = [], []
    for name, key in published.items():
        steps = mine.get(name)
        if not steps or key in {s["key"] for s in steps}:
            continue
        if own_folders and any(str(v).startswith(own_folders) for s in steps for v in (s.get("env") or {}).values()):
            incomparable.append(name)
            continue
        affects = name.startswith(ANSWER_STEPS)
        out.append(Difference(f"cache key of {name}", key[:12], ",".join(sorted(s["key"][:12] for s in steps)),
                              "what this step depends on differs (its key is computed from it)"
                              + ("" if affects else "; it does not decide the answers"), affects))
    return out, incomparable
