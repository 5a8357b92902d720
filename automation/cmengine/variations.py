"""Variation selection: `_x`, `-_x`, groups, `default`, `default_variations`, `base`,
combined `a,b` variations and dynamic `name.#` variations taking `_name.VALUE`.
"""
from __future__ import annotations

import copy

from .errors import VariationError, did_you_mean
from .manifest import Manifest


class Selection:
    """The variations chosen for one node."""

    def __init__(self, names: list[str] | None = None, applied: list[dict] | None = None):
        self.names = names if names is not None else []        # as the user writes them
        self.applied = applied if applied is not None else []  # their settings, in order

    @property
    def tags(self) -> list[str]:
        return ["_" + n for n in self.names]


def _resolve_name(m: Manifest, name: str) -> tuple[str, str]:
    """('fp8', '') for a plain variation, ('size.#', '128') for _size.128."""
    if name in m.variations:
        return name, ""
    prefix, dot, value = name.partition(".")
    if dot and f"{prefix}.#" in m.variations:
        return f"{prefix}.#", value
    plain = [v for v in m.variations if not v.endswith(".#") and "," not in v]
    dyn = [v[:-2] + ".VALUE" for v in m.variations if v.endswith(".#")]
    raise VariationError(
        f"script '{m.alias}' has no variation '_{name}'." + did_you_mean(name, plain),
        "Its variations: " + (", ".join("_" + v for v in sorted(plain + dyn)) or "none"))


def select(m: Manifest, requested: list[str], excluded: list[str] = ()) -> Selection:
    excluded = set(excluded)
    chosen: dict[str, str] = {}           # key in m.variations -> dynamic value
    order: list[str] = []                 # user-facing names in application order
    why: dict[str, str] = {}              # group -> variation that took it (for messages)

    def add(name: str, reason: str) -> None:
        key, value = _resolve_name(m, name)
        if key in chosen:
            if chosen[key] != value:
                raise VariationError(f"script '{m.alias}': '_{name}' conflicts with "
                                     f"'_{key[:-2]}.{chosen[key]}'")
            return
        var = m.variations[key]
        if var.group:
            if var.group in why:
                raise VariationError(
                    f"script '{m.alias}': variations '_{why[var.group]}' and '_{name}' are both in "
                    f"group '{var.group}', which takes one ({reason}).",
                    f"Keep one of: {', '.join('_' + v for v in m.groups[var.group])}")
            why[var.group] = name
        chosen[key] = value
        for b in var.base:
            add(b, f"base of _{name}")
        order.append(name)

    for name in requested:
        if name in excluded:
            raise VariationError(f"script '{m.alias}': variation '_{name}' is both asked for and "
                                 f"excluded with '-_{name}'")
        add(name, "asked for")

    # defaults: first those chosen variations ask for, then the manifest's, then `default: true`
    wanted_defaults: dict[str, str] = dict(m.get("default_variations") or {})
    for key in list(chosen):
        wanted_defaults.update(m.variations[key].data.get("default_variations") or {})
    for group, members in m.groups.items():
        if group in why:
            continue
        pick = wanted_defaults.get(group) or next(
            (v for v in members if m.variations[v].default), "")
        if pick and pick not in excluded:
            add(pick, f"default of group '{group}'")

    sel = Selection()
    applied_keys = [(_resolve_name(m, n)[0], n) for n in order]
    for key, name in applied_keys:
        sel.applied.append(_materialise(m.variations[key].data, chosen[key]))
    sel.names = sorted(order)
    # combined variations 'a,b' apply when all parts are chosen
    plain_chosen = {n for n in order}
    for key, var in m.variations.items():
        if "," in key and set(p.strip() for p in key.split(",")) <= plain_chosen:
            sel.applied.append(_materialise(var.data, ""))
    return sel


def _materialise(data: dict, value: str) -> dict:
    """A variation's settings with '#' replaced by the dynamic value."""
    if not value:
        return data
    return _replace_hash(copy.deepcopy(data), value)


def _replace_hash(obj, value: str):
    if isinstance(obj, str):
        return obj.replace("#", value)
    if isinstance(obj, list):
        return [_replace_hash(x, value) for x in obj]
    if hasattr(obj, "_replace"):   # a NamedTuple (Dep): keep its type
        return obj._replace(**{f: _replace_hash(getattr(obj, f), value) for f in obj._fields})
    if isinstance(obj, tuple):
        return tuple(_replace_hash(x, value) for x in obj)
    if isinstance(obj, dict):
        return {k: _replace_hash(v, value) for k, v in obj.items()}
    return obj
