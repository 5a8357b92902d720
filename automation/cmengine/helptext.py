"""`cm run script --tags=... --help`: what one script takes (inputs, variations by group,
versions, dependencies), read from its manifest. Nothing is planned or run."""
from __future__ import annotations

from .graph import Request
from .plantext import LEGEND
from .registry import Query, Registry


def script_help(registry: Registry, req: Request) -> str:
    q = Query.parse(req.tags, req.alias)
    m = registry.select(q, quiet=True)
    lines = [f"{m.alias} ({m.repo}): {m.folder}", f"  tags: {','.join(m.tags)}",
             f"  run:  cm run script --tags={','.join(m.tags)} [_variation ...] [--input=value ...]"]
    im = m.get("input_mapping") or {}
    desc = m.get("input_description") or {}
    lines.append("Inputs (--name=value -> env):" if im else "Inputs: none (set env with --env.NAME=VALUE)")
    for name in sorted(im):
        d = desc.get(name) if isinstance(desc, dict) else None
        text = d.get("desc", "") if isinstance(d, dict) else str(d or "")
        if isinstance(d, dict) and d.get("environment"):      # a secret the step also reads from there
            text += f" (or {d['environment']} in the environment)"
        default = m.get("default_env", {}).get(im[name])
        lines.append(f"  --{name:28s} {im[name]}" + (f"  {text}" if text else "")
                     + (f"  (default: {default})" if default not in (None, "") else ""))
    groups = m.groups
    if m.variations:
        lines.append("Variations (add _name to the tags):")
        defaults = m.get("default_variations") or {}
        for group in sorted(groups):
            pick = defaults.get(group) or next((v for v in groups[group]
                                                if m.variations[v].default), "")
            lines.append(f"  group {group}" + (f" (default _{pick})" if pick else "") + ":")
            lines += [f"    _{_shown(v)}" for v in sorted(groups[group])]
        free = sorted(v for v, var in m.variations.items() if not var.group and "," not in v)
        if free:
            lines.append("  without a group:")
            lines += [f"    _{_shown(v)}" for v in free]
        combined = sorted(v for v in m.variations if "," in v)
        if combined:
            lines.append("  applied when all parts are chosen: " + "; ".join(combined))
    versions = m.get("versions") or {}
    if versions:
        lines.append("Versions (--version=...): " + ", ".join(sorted(versions))
                     + (f" (default {m.get('default_version')})" if m.get("default_version") else ""))
    deps = [d for lst in ("deps", "prehook_deps", "posthook_deps", "post_deps") for d in m.deps[lst]]
    if deps:
        lines.append("Dependencies (change with --adr.NAME.tags=...):")
        for d in deps:
            names = f" [{','.join(d.names)}]" if d.names else ""
            lines.append(f"  {','.join(d.tags)}{names}")
    lines.append("The plan of a run (not printed here: add --dry-run, or use cm plan script): " + LEGEND)
    return "\n".join(lines)


def _shown(name: str) -> str:
    return name[:-2] + ".VALUE" if name.endswith(".#") else name
