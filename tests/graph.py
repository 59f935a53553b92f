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
