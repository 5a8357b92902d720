"""The user-facing steps describe each input in `input_description` (`name: {desc: ...}`, the key
cm4mlops and MLC use), which `cm run script --tags=... --help` prints beside the input
(cmengine/helptext.py); the `input_mapping` lines carry no description of their own."""
import os

import pytest
import yaml

from cmengine.registry import Repo
from enginefixtures import Runner

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DESCRIBED = ("run-mlperf-inference-app", "reproduce-mlperf-inference", "generate-mlperf-inference-submission",
             "build-mlperf-image", "run-vllm-server", "app-mlperf-inference",
             "run-mlperf-inference-submission-checker", "process-mlperf-accuracy")


def _path(alias):
    return os.path.join(ROOT, "script", alias, "_cm.yaml")


def _manifest(alias):
    with open(_path(alias), encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("alias", DESCRIBED)
def test_every_input_is_described_and_every_description_is_of_an_input(alias):
    m = _manifest(alias)
    inputs = m.get("input_mapping") or {}
    described = m.get("input_description") or {}
    assert inputs and isinstance(described, dict), f"script/{alias}/_cm.yaml: no input_mapping or input_description"
    undescribed = [name for name in inputs
                   if not isinstance(described.get(name), dict) or not str(described[name].get("desc") or "").strip()]
    assert not undescribed, f"script/{alias}/_cm.yaml: inputs without an input_description desc: {undescribed}"
    unknown = sorted(set(described) - set(inputs))
    assert not unknown, f"script/{alias}/_cm.yaml: input_description names inputs input_mapping lacks: {unknown}"


@pytest.mark.parametrize("alias", DESCRIBED)
def test_input_mapping_lines_carry_no_description(alias):
    """One source for each fact: a comment beside an input_mapping entry is not shown by --help."""
    with open(_path(alias), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index("input_mapping:") + 1
    block = []
    for line in lines[start:]:
        if not line.startswith(" "):
            break
        block.append(line)
    commented = [line.strip() for line in block if "#" in line]
    assert not commented, (f"script/{alias}/_cm.yaml: describe these inputs in input_description, not in a "
                           f"comment: {commented}")


def test_help_of_the_main_command_shows_the_description_of_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    desc = _manifest("run-mlperf-inference-app")["input_description"]["model"]["desc"]
    runner = Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)
    out = runner.run("run-mlperf,inference,run-mlperf-inference-app", help=True)
    assert out["return"] == 0, out
    line = next((x for x in runner.output.splitlines() if x.startswith("  --model ")), "")
    assert "CM_MLPERF_MODEL" in line and desc in line, runner.output
    assert "the benchmark (docs/benchmarks.md)" in line


@pytest.mark.parametrize("alias", DESCRIBED)
def test_a_secret_input_names_the_environment_variable_its_step_also_reads(alias):
    """`environment: NAME` beside a secret's desc: --help shows it, and a secret typed on the command line
    is warned about with that way named (cmengine/cli.typed_secrets)."""
    from cmcontract.secret import is_secret
    m = _manifest(alias)
    for name, d in (m.get("input_description") or {}).items():
        if "environment" in d:
            assert is_secret(name) and is_secret(d["environment"]), (alias, name)
    if "api_key" in (m.get("input_mapping") or {}):
        assert m["input_description"]["api_key"]["environment"] == "VLLM_API_KEY"


def test_help_shows_where_a_secret_is_read_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = Runner([Repo("cm4mlperf-llm", ROOT)], str(tmp_path / "cache"), include_project=True)
    assert runner.run("run-mlperf,inference,run-mlperf-inference-app", help=True)["return"] == 0
    line = next((x for x in runner.output.splitlines() if x.startswith("  --api_key ")), "")
    assert "(or VLLM_API_KEY in the environment)" in line, runner.output


def test_a_secret_typed_on_the_command_line_is_warned_about_and_the_environment_named():
    from cmengine.cli import typed_secrets
    described = {"api_key": {"desc": "the key", "environment": "VLLM_API_KEY"}}
    argv = ["/venv/bin/cm", "run", "script", "--tags=x", "--api_key=s3cret", "--env.HF_TOKEN=hf_x", "--model=m",
            "--env.CM_X=1"]
    said = typed_secrets({"api_key": "s3cret", "model": "m", "hf_token": "t"}, {"HF_TOKEN": "hf_x", "CM_X": "1"},
                         argv, described)
    assert said == [
        "warning: --api_key is a secret on the command line, which every user of this machine can read (ps) while "
        "the run lasts and your shell's history keeps; export VLLM_API_KEY=... instead (this step reads it there)",
        "warning: --env.HF_TOKEN is a secret on the command line, which every user of this machine can read (ps) "
        "while the run lasts and your shell's history keeps; give it through the environment where the step reads "
        "one (see --help)"]
    assert not [s for s in said if "s3cret" in s or "hf_x" in s]
    # handed in through cmind's Python API (hf_token above), nothing is on a command line
    assert typed_secrets({"api_key": "s3cret"}, {}, ["python", "my_script.py"], described) == []
