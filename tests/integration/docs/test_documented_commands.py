"""Every `cm run script` command in README.md and docs/ is planned (`--dry-run`, in this process) on a
host of the kind its page is for: a `--device=cuda` command on a recorded 8x H100 node, a
`--device=rocm` one on a recorded AMD node, the rest on this machine. A documented command that names
an unknown input, tag or variation, or one the run's checks refuse, fails here with its file and line.

What a page writes as a placeholder (ORG, DIR, N, ...) is given a value of the input's kind first;
`[--x=Y]` (optional) is planned with the option. A schematic mention (`cm run script ...`,
`--tags=...`, `get,ml-model,llama2[,_7b]`) is no command and is left out, and so are commands of
scripts that are not this repository's (SCRIPTS_ELSEWHERE, each with its reason)."""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from cmind import cli as cmind_cli

from cmengine.registry import Repo
from enginefixtures import Runner
from inference_sources import inference_source
from recorded_hosts import amd_host, nvidia_host

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# tags of scripts this repository does not have, where a page names them on purpose
SCRIPTS_ELSEWHERE = {
    "bench-chain,s01": "the synthetic chain benchmarks/engine.py builds in a repository of its own",
}
# a command a page shows as refused, and the words of the refusal the page quotes
REFUSED = {
    "--vllm_model_name=neuralmagic/Llama-2-7b-chat-hf-FP8 --server_target_qps=9.2":     # seed 003's, as published
        "--submitter: is not given",
}
# results repositories' folders a page names, and the project's copies of them (../shared/published-results)
SHARED = ROOT.parent / "shared" / "published-results"
COPIES = {
    "https://github.com/mlcommons/inference_results_v5.1/tree/main/closed/Vultr/": SHARED / "vultr-v5.1-mi325x",
    "https://github.com/mlcommons/inference_results_v4.1/tree/main/open/NeuralMagic/": SHARED / "nm-v4.1-fp8",
}
NUMBER_INPUTS = re.compile(r"(qps|count|latency|replicas|size|duration|budget|workers|window|seqs|len|tokens|"
                           r"gib|members|nodes|port|wait|num_cpus)$")
PATH_INPUTS = re.compile(r"(dir|path|src|record|from|json|file|checkpoint|desc|metadata|conf)$")
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?::\d+)?|\.\.\.|<[^>]*>|\.\.\./.*)$")


def _inline_end(text: str) -> str:
    return text.split("`")[0]


def documented_commands() -> list[tuple[str, str]]:
    """(where: 'file:line', the command) for every `cm run script` of the pages, continuation lines
    joined, a trailing comment or `&&` chain cut."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            at = line.find("cm run script")
            if at < 0:
                continue
            inline = line[:at].count("`") % 2 == 1
            cmd, k = line[at:], n
            if inline:
                while "`" not in cmd and k + 1 < len(lines):
                    k += 1
                    cmd += " " + lines[k].strip()
                cmd = _inline_end(cmd)
            else:
                while cmd.rstrip().endswith("\\") and k + 1 < len(lines):
                    k += 1
                    cmd = cmd.rstrip()[:-1] + " " + lines[k].strip()
            cmd = re.split(r"\s+#\s|\s&&\s|\s\|\s", cmd)[0].strip()
            found.append((f"{page.relative_to(ROOT)}:{n + 1}", cmd))
    return found


def schematic(cmd: str) -> bool:
    """A mention, not a command: no tags, or tags/arguments written as a pattern."""
    tags = re.search(r"--tags=(\S+)", cmd)
    return (tags is None or "..." in tags.group(1) or "[" in tags.group(1) or "|" in tags.group(1)
            or re.search(r"\s\.\.\.(\s|$)", cmd) is not None)


def _value_for(name: str, value):
    if name == "from":                 # a source the step reads at plan time: the project's copies
        copy = next((c for url, c in COPIES.items() if str(value).startswith(url)), None)
        return str(copy or SHARED / "nm-v4.1-fp8") if copy or PLACEHOLDER.match(str(value)) else value
    if not isinstance(value, str) or not PLACEHOLDER.match(value):
        return value
    if NUMBER_INPUTS.search(name):
        return "2"
    if name in ("api_server",):
        return "http://127.0.0.1:8000"
    if name in ("ray_address",):
        return "127.0.0.1:6379"
    if name in ("inference_src", "src_path"):  # checked at plan time: an inference checkout's layout
        return inference_source("6.1")
    if PATH_INPUTS.search(name):
        return f"/tmp/placeholder-{name}"
    return value.strip("<>.") or "x"          # a name (ORG, NAME): as written


def inputs_of(cmd: str) -> dict:
    argv = shlex.split(cmd.replace("[", " ").replace("]", " "))
    assert argv[:3] == ["cm", "run", "script"], cmd
    parsed = cmind_cli.parse(argv[1:])["cm_input"]
    inputs = {k: _value_for(k, v) for k, v in parsed.items() if k not in ("action", "automation", "cmd")}
    inputs["dry_run"] = True
    inputs.pop("plan", None)
    return inputs


COMMANDS = documented_commands()
PLANNED = [(where, cmd) for where, cmd in COMMANDS if not schematic(cmd)
           and not any(f"--tags={t}" in cmd for t in SCRIPTS_ELSEWHERE)]


def test_the_pages_hold_commands_and_the_exceptions_are_still_there():
    assert len(PLANNED) >= 40, [w for w, _ in PLANNED]
    for tags in SCRIPTS_ELSEWHERE:
        assert any(f"--tags={tags}" in c for _, c in COMMANDS), f"{tags}: no page names it now; drop it here"
    for key in REFUSED:
        assert any(key in c for _, c in PLANNED), f"{key}: no page shows it now; drop it here"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    base = tmp_path_factory.mktemp("hosts")
    nvidia_host(base / "cuda", "h100_8x")
    amd_host(base / "rocm")
    (base / "none").mkdir()
    return base


def plan_documented(cmd: str, cache: str, hosts: Path, monkeypatch) -> tuple[dict, str]:
    device = (re.search(r"--device=(\w+)", cmd) or [None, "none"])[1]
    bin_dir = hosts / (device if device in ("cuda", "rocm") else "none")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    runner = Runner([Repo("cm4mlperf-llm", str(ROOT))], cache, include_project=True)
    inputs = inputs_of(cmd)
    tags = inputs.pop("tags")
    return runner.run(tags, **inputs), runner.output


@pytest.mark.parametrize("where, cmd", PLANNED, ids=[w for w, _ in PLANNED])
def test_a_documented_command_plans(where, cmd, tmp_path_factory, hosts, monkeypatch):
    cache = str(tmp_path_factory.getbasetemp() / "docs-plan-cache")
    r, out = plan_documented(cmd, cache, hosts, monkeypatch)
    refusal = next((words for key, words in REFUSED.items() if key in cmd), None)
    if refusal:
        assert r["return"] != 0 and refusal in r["error"], f"{where}: the page says it is refused: {refusal}"
        return
    assert r["return"] == 0, f"{where}: {cmd}\n{r.get('error')}"
    assert "Plan for" in out


def test_a_planted_typo_fails(tmp_path, hosts, monkeypatch):
    """The check can fail: the README's command with a misspelt input, tag and variation."""
    readme = next(c for w, c in PLANNED if w.startswith("README.md"))
    for typo in (readme.replace("--division=", "--divison="), readme.replace("_full", "_fulll"),
                 readme.replace("run-mlperf,", "run-mlperff,")):
        r, _ = plan_documented(typo, str(tmp_path / "cache"), hosts, monkeypatch)
        assert r["return"] != 0, typo


def test_the_readme_s_first_screen_fits_and_holds_the_two_commands():
    """What a newcomer sees before the first section after the commands: at most 40 lines, with the
    clone, the demo command, the test command and the links onward (GPUs, reproduce, benchmarks)."""
    text = (ROOT / "README.md").read_text()
    first = text.split("\n## More about the demo")[0]
    assert first != text and len(first.splitlines()) <= 40
    assert "git clone" in first and "python -m pytest" in first
    assert "cm run script --tags=run-mlperf,inference,_full,_embedded" in first
    for link in ("docs/gpu.md", "docs/reproduce.md", "docs/benchmarks.md", "https://github.com/mlcommons/inference_results_"):
        assert link in first, link
    assert "../shared" not in first
