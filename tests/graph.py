"""The asset graph as plain data (keys, groups, dependencies, checks), for the snapshot and UI tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg


def graph_of(defs: dg.Definitions) -> dict:
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(parent.to_user_string() for parent in node.parent_keys),
            "materializable": node.is_materializable,
        }
    checks = sorted(f"{check.asset_key.to_user_string()}:{check.name}" for check in graph.asset_check_keys)
    return {"assets": assets, "checks": checks}


def cycles_between_assets(graph: dict) -> list[list[str]]:
    """The groups of assets that depend on each other in a circle (graph_of's data): Dagster's UI draws an asset's
    dependency on itself (its previous month) but refuses any such group with "Cycle detected". Empty when acyclic.
    """
    assets = graph["assets"]
    others = {key: [d for d in node["deps"] if d != key and d in assets] for key, node in assets.items()}
    return strongly_connected(others)


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The circles of a directed graph (node -> the nodes it points to): each group of nodes that reach one another
    (more than one node, or one pointing to itself), its members sorted; Tarjan's algorithm, without recursion.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1 or node in graph[node]:
                        groups.append(sorted(group))
    return sorted(groups)
