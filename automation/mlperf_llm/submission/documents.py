"""The human-readable parts of a submission, rendered from jinja2 templates in templates/."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

from ..benchmarks import get_benchmark
from ..templates import page_env, text_env
from .inputs import Metadata, placeholder_note
from .quantization import method_lines, scheme_of
from .results import ScenarioResult, targets_for
from .spec import RESULT_KEYS, SCENARIO_ORDER

_TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
_ENV = text_env(_TEMPLATES)         # the READMEs (Markdown)
_PAGES = page_env(_TEMPLATES)       # summary.html: every value escaped

SYSTEM_GROUPS = (   # (id, title, field prefix or list, wide, ends a row) as in seeds 000/001
    ("accelerator", "Accelerator Details", ("accelerator", "accelerators_per_node"), False, False),
    ("processor", "Processor and Memory Details", ("host_processor", "host_memory"), False, True),
    ("other_hardware", "Other Hardware Details",
     ("cooling", "hw_notes", "host_storage", "number_of_nodes", "system_type_detail"), False, False),
    ("network", "Network and Interconnect Details", ("host_network",), False, True),
    ("software", "Software Details", ("framework", "operating_system", "other_software_stack", "sw_notes"), True, True),
)


@dataclass
class _Group:
    id: str
    title: str
    rows: list
    wide: bool
    end_row: bool


def system_groups(system: dict) -> list[_Group]:
    groups = []
    for gid, title, prefixes, wide, end in SYSTEM_GROUPS:
        rows = sorted((k, system[k]) for k in system if any(k == p or k.startswith(p) for p in prefixes))
        groups.append(_Group(gid, title, rows, wide, end))
    return groups


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def render_measurement_readme(meta: Metadata, r: ScenarioResult) -> str:
    _, label = targets_for(meta, r.model)
    phrase = "Required accuracy for closed division" if label == "closed division" else f"Required accuracy ({label})"
    accuracy = [dict(metric=c.metric, value=f"{c.value:g}", required=c.target.describe(),
                     phrase=phrase + (f" ({c.target.note})" if c.target.note else ""), passed=c.passed)
                for c in r.checks]
    perf = [dict(name=RESULT_KEYS[r.scenario].title, value=_fmt(r.value)),
            dict(name="Result is", value="VALID" if r.valid else
                 "INVALID (" + ", ".join(r.performance_log.failed_conditions() or ["see the log"]) + " not met)")]
    if r.scenario in ("Server", "Interactive"):
        perf += [dict(name="Completed samples per second", value=_fmt(float(r.performance_log.get(
                     "result_completed_samples_per_sec", 0)))),
                 dict(name="p99 time to first token (ms)", value=_fmt(r.ttft_p99_ms or 0)),
                 dict(name="p99 time per output token (ms)", value=_fmt(r.tpot_p99_ms or 0))]
    elif r.scenario == "SingleStream":
        perf += [dict(name="Mean latency (ms)", value=_fmt(r.percentile_ms("result_mean_latency_ns") or 0)),
                 dict(name="p90 time to first token (ms)",
                      value=_fmt(r.percentile_ms("result_first_token_90.00_percentile_latency_ns") or 0))]
    else:
        perf.append(dict(name="Samples per second", value=_fmt(float(r.performance_log.get(
            "result_samples_per_second", 0)))))
    return _ENV.get_template("measurement_readme.md.j2").render(
        execution_mode=meta.execution_mode, host_platform=meta.host_platform, command=meta.command,
        vllm_serve_command=meta.vllm_serve_command, component_versions=meta.component_versions,
        step_cache_keys=meta.step_cache_keys,
        system_name=meta.system_name, model=r.model, scenario=r.scenario,
        served_model_name=meta.served_model_name, accuracy=accuracy, performance=perf)


_SCENARIO_LINES = {    # how the SUT serves each scenario
    "Offline": "Offline keeps many requests in flight.",
    "Streamed": "{names}: each answer is streamed; `FirstTokenComplete` is called on the first token, "
                "`QuerySamplesComplete` with all ids and `n_tokens`.",
}


def render_code_readme(meta: Metadata, model: str, scenarios: list[str]) -> str:
    """The implementation's README, its facts from the benchmark table (data set, prompt, metrics,
    compliance tests) and the scenarios of the tree."""
    bench = get_benchmark(model)
    streamed = [s for s in SCENARIO_ORDER if s in scenarios and s != "Offline"]
    if "interactive" in model and "Interactive" not in streamed:     # v5.0's Interactive benchmark (Server)
        streamed.append("Interactive")
    lines = ([_SCENARIO_LINES["Offline"]] if "Offline" in scenarios else []) + (
        [_SCENARIO_LINES["Streamed"].format(names=" and ".join(streamed))] if streamed else [])
    return _ENV.get_template("code_readme.md.j2").render(
        model=model, implementation=meta.implementation, framework=meta.framework, round=meta.round,
        code_version=meta.code_version, command=meta.command, rows=bench.dataset_rows,
        dataset_tags=bench.dataset_tags, prompt=bench.prompt, max_new_tokens=bench.max_new_tokens,
        scenario_lines=lines, metrics=", ".join(bench.accuracy.metrics), family=bench.family,
        compliance=", ".join(bench.compliance))


def render_calibration(meta: Metadata, models: list[str]) -> str:
    q = meta.quantization
    return _ENV.get_template("calibration.md.j2").render(
        submitter=meta.submitter, round=meta.round, model_names=", ".join(models), checkpoint=q.checkpoint,
        scheme=scheme_of(q), method=method_lines(q), ignore=", ".join(q.ignore),
        vllm_serve_command=meta.vllm_serve_command, calibration_dataset=q.calibration_dataset,
        num_samples=q.num_calibration_samples, tool=q.tool)


def _scenarios(results: list[ScenarioResult]) -> list[str]:
    present = {r.scenario for r in results}
    return [s for s in SCENARIO_ORDER if s in present]


def _bound(v: float) -> str:
    """6 significant digits, but a sum such as GEN_LEN's 2746001.7 in full, not as 2.746e+06."""
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.1f}"


def _target_text(meta: Metadata, model: str) -> str:
    targets, _ = targets_for(meta, model)
    return ", ".join(f"{t.metric}: {_bound(t.minimum)}" + (f"..{_bound(t.maximum)}" if t.maximum else "")
                     for t in targets)


def render_summary_html(meta: Metadata, system: dict, results: list[ScenarioResult], figures=(), sweep=None) -> str:
    """The results page; figures (plots.figures.Figure) and a load sweep's table (plots.figures.SweepTable)
    below the results table."""
    scenarios = _scenarios(results)
    rows = []
    for model in sorted({r.model for r in results}):
        by_s = {r.scenario: r for r in results if r.model == model}
        cells = []
        for s in scenarios:
            r = by_s.get(s)
            cells.append(dict(accuracy=r.accuracy_text() if r else "", metric=r.unit if r else "",
                              performance=(_fmt(r.value) + ("" if r.valid else " (INVALID)")) if r else "",
                              invalid=bool(r and not r.valid)))
        rows.append(dict(model=model, target=_target_text(meta, model), cells=cells))
    notes = []
    if meta.execution_mode == "test":
        notes.append("test-mode run: shorter than the MLPerf minimums, so LoadGen marks it INVALID")
    _, label = targets_for(meta, results[0].model)
    if label != "closed division":
        notes.append(f"accuracy targets: {label}")
    for r in results:
        notes += [f"{r.model} {r.scenario}: {n}" for n in r.notes]
    return _PAGES.get_template("summary.html.j2").render(
        round=meta.round, year=datetime.date.today().year, submitter=meta.submitter, system=system,
        placeholder=placeholder_note(meta.submitter),
        category=meta.category, division=meta.division, availability=meta.availability or system.get("status", ""),
        system_groups=system_groups(system), scenarios=scenarios, rows=rows, notes=notes, figures=figures,
        sweep=sweep)


def render_submission_readme(meta: Metadata, system: dict, results: list[ScenarioResult]) -> str:
    table = [dict(model=r.model, scenario=r.scenario, accuracy=r.accuracy_text(", "), performance=_fmt(r.value),
                  unit=r.unit, validity="VALID" if r.valid else "INVALID") for r in results]
    _, label = targets_for(meta, results[0].model)
    return _ENV.get_template("submission_readme.md.j2").render(
        round=meta.round, submitter=meta.submitter, division=meta.division, category=meta.category,
        placeholder=placeholder_note(meta.submitter),
        system_name=meta.system_name, system_title=system.get("system_name", ""),
        execution_mode=meta.execution_mode, table=table, targets_label=label,
        targets_text=_target_text(meta, results[0].model))
