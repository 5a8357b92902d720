"""SVG drawn with matplotlib (a well-kept plotting library: histograms, lines, axes and text as a
person expects them, and SVG with no network at view time) for the results pages: a latency
distribution with its p99 and bound, tokens/s over a run, latency against load. Each function
returns the SVG's text, drawn the same way for the same data (no date, fixed ids)."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

matplotlib.rcParams.update({"svg.hashsalt": "cm4mlperf-llm", "svg.fonttype": "none", "font.size": 9})
SIZE = (5.0, 2.6)      # inches: two side by side on a page


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "cm4mlperf-llm"}, bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]       # no XML prolog: the page inlines it


def distribution(values_ms, title: str, xlabel: str, p99_ms: float | None, bound_ms: float | None) -> str:
    """A histogram of one latency, its p99 (LoadGen's, where given) and the benchmark's bound marked."""
    fig, ax = plt.subplots(figsize=SIZE)
    lo, hi = min(values_ms), max(values_ms)
    # values apart by float noise alone (two queries' TPOT, 1315.88 ms each but for the 13th digit) leave
    # no room for finite bins (numpy refuses): drawn as equal values are, on a 1 ms wide range
    flat = hi - lo <= max(abs(lo), abs(hi), 1.0) * 1e-9
    ax.hist(values_ms, bins=min(40, max(5, len(values_ms) // 3)), range=(lo - 0.5, hi + 0.5) if flat else None,
            color="#4a7bb7", edgecolor="white")
    if p99_ms is not None:
        ax.axvline(p99_ms, color="#e08a00", linestyle="--", label=f"p99 {p99_ms:.0f} ms")
    if bound_ms is not None:
        ax.axvline(bound_ms, color="#b00020", label=f"bound {bound_ms:g} ms")
    ax.set(title=title, xlabel=xlabel, ylabel="queries")
    if p99_ms is not None or bound_ms is not None:
        ax.legend(loc="upper right")
    return _svg(fig)


def over_run(times_s, tokens_per_s, title: str) -> str:
    """Output tokens/s over a run."""
    fig, ax = plt.subplots(figsize=SIZE)
    ax.plot(times_s, tokens_per_s, color="#2a8a4a")
    ax.fill_between(times_s, tokens_per_s, color="#2a8a4a", alpha=0.15)
    ax.set(title=title, xlabel="seconds from the first query", ylabel="output tokens/s")
    ax.set_ylim(bottom=0)
    return _svg(fig)


def against_load(achieved_qps, ttft_p99_ms, tpot_p99_ms, bounds_ms: tuple[float, float], title: str) -> str:
    """p99 TTFT and TPOT against the load achieved (a sweep), each beside its bound."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(SIZE[0] * 2, SIZE[1]))
    for ax, values, bound, name in ((left, ttft_p99_ms, bounds_ms[0], "p99 TTFT"),
                                    (right, tpot_p99_ms, bounds_ms[1], "p99 TPOT")):
        points = [(q, v) for q, v in zip(achieved_qps, values) if q is not None and v is not None]
        ax.plot([q for q, _ in points], [v for _, v in points], marker="o", color="#4a7bb7", label=name)
        ax.axhline(bound, color="#b00020", label=f"bound {bound:g} ms")
        ax.set(title=f"{title}: {name}", xlabel="achieved queries/s", ylabel="ms")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left")
    return _svg(fig)



def recorded_against_reproduced(labels, recorded, reproduced, title: str, unit: str) -> str:
    """Grouped bars: each figure of a test as recorded (published) and as reproduced here."""
    fig, ax = plt.subplots(figsize=SIZE)
    xs = list(range(len(labels)))
    ax.bar([x - 0.2 for x in xs], [v or 0 for v in recorded], width=0.4, label="recorded", color="#999999")
    ax.bar([x + 0.2 for x in xs], [v or 0 for v in reproduced], width=0.4, label="reproduced", color="#4a7bb7")
    ax.set_xticks(xs, labels)
    ax.set(title=title, ylabel=unit)
    ax.legend(loc="upper right")
    return _svg(fig)
