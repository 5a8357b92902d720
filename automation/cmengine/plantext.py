"""The printed plan (`--dry-run`, `cm plan script`): read top-down, numbered in execution order.

Each step is followed by the steps it needs, indented below it, in the order its manifest lists
them. `#N` is the order in which the steps run (a step's `deps` run before it, its prehook,
posthook and post dependencies during and after it); a step needed in several places is
printed once and then referred to by its number. `-j` gives the plan as JSON
(cli._plan_json, unchanged: one entry per step in execution order, with its depth).
"""
from __future__ import annotations

from .graph import Edge, Node, Plan

LEGEND = ("Read top-down: each step, then the steps it needs indented below it; #N is the order "
          "in which steps run; [phase] marks a dependency that runs after the step's own hooks "
          "start; '= #N' is a step planned once and needed again here.")


def execution_numbers(plan: Plan) -> dict[str, int]:
    """{node key: its place in the execution order, from 1}."""
    order = [node.key for _, _, node, first in plan.walk() if first]
    return {key: i for i, key in enumerate(order, 1)}


def render(plan: Plan) -> str:
    """One line per step with its number, cache key and verdict and the reason."""
    numbers = execution_numbers(plan)
    width = len(str(len(numbers)))
    lines = [f"Plan for '{plan.root.name}' ({len(plan.nodes)} distinct steps):", LEGEND]
    shown: set[str] = set()

    def line(node: Node, edge: Edge | None, depth: int) -> None:
        pad = "  " * depth
        num = f"#{numbers[node.key]:<{width}}"
        phase = "" if edge is None or edge.phase == "deps" else f"[{edge.phase}] "
        if node.key in shown:
            lines.append(f"{pad}= {num} {phase}{node.name}  (planned above)")
            return
        shown.add(node.key)
        v = node.verdict
        verdict = f"{v.action:7s} {v.reason}" if v else ""
        cond = f"  ({edge.reason})" if edge is not None and edge.reason else ""
        lines.append(f"{pad}{num} {phase}{node.name}  [{node.key[:12]}]  {verdict}{cond}")
        for e in node.edges:
            if e.node is not None:
                line(e.node, e, depth + 1)

    line(plan.root, None, 0)
    unplanned = [f"  (not planned under {plan.nodes[key].alias}: {','.join(e.dep.tags)} — {e.reason})"
                 for key in numbers for e in plan.nodes[key].edges if e.node is None]
    return "\n".join(lines + list(dict.fromkeys(unplanned)))
