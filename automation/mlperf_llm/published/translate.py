"""A CM (cm4mlops) or MLC (mlperf-automations) command of a published result, translated into this
tool's one command: each input and variation kept (this tool reads it the same way), replaced (the
replay sets it itself), or named as not reproducible here, with the reason. The table is TRANSLATION;
docs/reproduce.md shows it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .commands import Command

KEEP, REPLACE, DROP = "kept", "replaced", "not reproduced"

# input -> (what happens, why); inputs not listed are not reproduced ("unknown to this tool")
TRANSLATION: dict[str, tuple[str, str]] = {
    "model": (KEEP, "the benchmark"),
    "implementation": (KEEP, "reference: this tool's harness drives LoadGen as the reference does"),
    "division": (KEEP, "closed or open"),
    "category": (KEEP, "datacenter or edge"),
    "device": (KEEP, "the vLLM build (cpu or cuda)"),
    "scenario": (KEEP, "the LoadGen scenario"),
    "execution_mode": (KEEP, "test or valid"),
    "server_target_qps": (KEEP, "the published Server target"),
    "offline_target_qps": (KEEP, "the published Offline target"),
    "interactive_target_qps": (KEEP, "the published Interactive target"),
    "singlestream_target_latency": (KEEP, "the published SingleStream target"),
    "test_query_count": (KEEP, "queries per test in test mode"),
    "num_workers": (KEEP, "the harness's client workers"),
    "submitter": (KEEP, "the submitter's name in the tree"),
    "hw_name": (KEEP, "the system's name"),
    "quiet": (KEEP, "no questions"),
    "vllm_model_name": (KEEP, "the model the server serves"),
    "max_test_duration": (KEEP, "a test's time limit"),
    "api_server": (REPLACE, "a server on the submitter's machine: the replay starts its own with the published "
                            "server flags (or give --api_server=URL of yours)"),
    "rerun": (DROP, "cm4mlops's re-run of cached steps: this tool's cache is keyed on what each step "
                    "depends on, so what must run again runs again"),
    "adr.mlperf-implementation.tags": (DROP, "a fork of the reference implementation: this tool's harness is "
                                             "its own, the fork's changes are not applied"),
    "docker": (DROP, "CM's docker wrapper: the replay runs on this machine"),
    "results_dir": (REPLACE, "the replay's own results folder"),
    "submission_dir": (REPLACE, "the replay's own submission folder"),
    "clean": (DROP, "cm4mlops's clean-up of earlier results: the replay writes a new folder"),
}
VARIATIONS = {"full", "submission", "performance-only", "accuracy-only", "find-performance", "all-scenarios",
              "all-modes"}
ROUND_TAG = re.compile(r"^_r(\d+\.\d+)(?:_default)?$")


@dataclass
class Translation:
    command: Command
    request: dict = field(default_factory=dict)          # this tool's inputs (tags included)
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)  # (input, value, what happens, why)

    @property
    def argv(self) -> list[str]:
        """The one command, as it would be typed."""
        args = ["cm", "run", "script", f"--tags={self.request.get('tags', '')}"]
        return args + [f"--{k}={v}" for k, v in self.request.items() if k != "tags"]


def translate(command: Command) -> Translation:
    t = Translation(command)
    opts = command.options()
    tags = ["run-mlperf", "inference"]
    for tag in command.tags():
        if tag in ("run-mlperf", "inference", "run,mlperf", "mlperf"):
            continue
        name = tag.lstrip("_")
        m = ROUND_TAG.match(tag)
        if m:
            tags.append(f"_r{m.group(1)}")
            t.rows.append((f"tag {tag}", "", KEEP, f"round v{m.group(1)}"))
        elif tag.startswith("_") and name in VARIATIONS:
            tags.append(tag)
            t.rows.append((f"tag {tag}", "", KEEP, "the same run style"))
        elif tag.startswith("_"):
            t.rows.append((f"tag {tag}", "", DROP, "a variation this tool does not have"))
    t.request["tags"] = ",".join(tags)
    for key, value in opts.items():
        if key == "tags":
            continue
        what, why = TRANSLATION.get(key, (DROP, "an input this tool does not know"))
        if key.startswith("env."):
            what, why = DROP, "an environment variable of cm4mlops's scripts"
        if key == "device" and "api_server" in opts:
            what, why = REPLACE, ("with --api_server this was the harness's device in cm4mlops; here --device "
                                  "chooses the vLLM build of the server the replay starts: the published "
                                  "system's accelerators decide it")
        t.rows.append((f"--{key}", value, what, why))
        if what == KEEP:
            t.request[key] = value
    return t


def render_table(t: Translation) -> str:
    lines = ["| input | value | here | why |", "|---|---|---|---|"]
    lines += [f"| `{i}` | `{v}` | {w} | {y} |" if v else f"| `{i}` |  | {w} | {y} |" for i, v, w, y in t.rows]
    return "\n".join(lines)
