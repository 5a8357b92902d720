"""Where a test's target comes from when it was not given: an earlier `_find-performance` run's
search in the results folder, or the fastest Offline test of this run; each source noted for
targets.json and said."""

from __future__ import annotations

from dataclasses import replace

from .request import FRACTIONS, HarnessRequest
from .search import SEARCH_FILE, Searched
from .testrun import RunOutcome
from .userconf import TARGET_INPUTS, pick_targets


def searched(req: HarnessRequest, sources: dict[str, str]) -> HarnessRequest:
    """The targets an earlier _find-performance run searched into this results folder, for the
    scenarios given no target; said, and ignored (said) when searched for another model, round or
    number of endpoints."""
    found = Searched.load(req.results_dir)
    if found is None:
        return req
    here = (req.model, req.rnd.name, len(req.api_servers))
    if (found.model, found.round, found.endpoints) != here:
        print(f"{SEARCH_FILE} in {req.results_dir} was searched for {found.model} v{found.round} on "
              f"{found.endpoints} endpoint(s), not {here[0]} v{here[1]} on {here[2]}: not used "
              "(run _find-performance again)", flush=True)
        return req
    updates = {}
    for scenario, qps in found.targets().items():
        name = TARGET_INPUTS[scenario]
        if scenario in req.scenarios and getattr(req, name) is None:
            updates[name] = qps
            sources[scenario] = found.how(scenario)
            print(f"{scenario} target_qps {qps:g}: {sources[scenario]} ({SEARCH_FILE}); pass "
                  f"--{scenario.lower()}_target_qps to choose another", flush=True)
    return replace(req, **updates)

def with_targets(req: HarnessRequest, targets: dict[str, float], source: str,
                  sources: dict[str, str]) -> HarnessRequest:
    """Fill the targets the user did not give; note where each came from."""
    updates = {}
    for scenario, value in targets.items():
        name = TARGET_INPUTS[scenario]
        if getattr(req, name) is None:
            updates[name] = value
            sources[scenario] = source
    return replace(req, **updates)

def derive_from_offline(req: HarnessRequest, offline: list[RunOutcome], scenario: str,
                         sources: dict[str, str]) -> HarnessRequest:
    """Before a Server/Interactive test without a target: the target the fastest Offline test of
    this request implies (its whole batch is in flight, so it measures the server's throughput)."""
    rates = [o.offline_rate() for o in offline if o.verdict != "FAILED"]
    rates = [r for r in rates if r[0] > 0]
    if scenario not in FRACTIONS or req.target_for(scenario) is not None or not rates:
        return req
    rate, what = max(rates)
    t = pick_targets(rate)
    new = with_targets(req, {scenario: t[scenario]},
                        f"derived from the {what} of this run ({rate:.3g} samples/s)", sources)
    print(f"{scenario} target_qps {t[scenario]:g}: {sources[scenario]}, x{FRACTIONS[scenario]}; "
          f"pass --{scenario.lower()}_target_qps to choose it", flush=True)
    return new
