"""The asset graph as plain data (keys, groups, dependencies, checks), for the snapshot and UI tests."""

from __future__ import annotations

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
    deps = {key: [d for d in node["deps"] if d != key and d in assets] for key, node in assets.items()}
    # Tarjan's strongly connected components, without recursion.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(deps):
        if root in index:
            continue
        work = [(root, iter(deps[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(deps[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)
