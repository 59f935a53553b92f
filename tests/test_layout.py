"""The layout's guards, read from the source with `ast` (no import, no subprocess, no Dagster).

No import circle, the pure code free of Dagster, small top levels, module docstrings, the scenario model light, each
stage's code version hashing every module its assets run, and the folder map and the paths the docs name current.

An import is any `import` or `from ... import` statement, at module level or inside a function (run later, but a
circle all the same), except under `if TYPE_CHECKING:` (never run). `from pkg import name` imports the submodule
`pkg.name` when there is one; importing a module imports its packages' `__init__` first.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

from pipeline import code_versions
from pipeline.code_versions import STAGE_SOURCES, code_version, stage_files
from tests.graph import strongly_connected

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "assets", "schemas")
#: What runs Dagster from our CLI and tunes its storage: not asset wiring.
RUNTIME = ROOT / "assets" / "runtime"
MAX_TOP_LEVEL_MODULES = 10
MAX_WIRING_LINES = 1500

#: Each stage's entry points: the asset modules whose assets carry that stage's code version (checked below against
#: their `table_attributes(model, "<stage>", ...)` and `code_version("<stage>", ...)` calls).
STAGE_ENTRY_POINTS = {
    "ingest": ("assets.ingest",),
    "validate": ("assets.validate",),
    "rate": ("assets.rate",),
    "analyse": ("assets.analyse", "assets.evaluation", "assets.report"),
    "publish": ("assets.publish",),
}
#: Modules a stage imports that cannot change what it writes, so its code version need not hash them.
NOT_STAGE_SOURCES = {
    "pipeline/__init__.py": "sets the process's allocators (malloc.py) on import; computes nothing",
    "pipeline/malloc.py": "malloc arenas and Polars' allocator: memory use, not values",
    "pipeline/operations/__init__.py": "the folder's docstring",
    "pipeline/operations/progress.py": "prints a month's progress to a reporter when one is installed",
    "pipeline/code_versions.py": "computes the code versions themselves (metadata); writes no table",
    "pipeline/operations/instance_dirs.py": "which Dagster instance a command uses, named in printed commands",
}
#: What the scenario model must not load: the command line, the dump readers, the generator.
HEAVY_FOR_SCENARIO_MODEL = ("pipeline.cli", "pipeline.formats", "pipeline.generator")
#: Where a module docstring's summary must be one line: the packages, and the tests and benchmarks beside them.
ONE_LINE_SUMMARY_FOLDERS = (*PACKAGES, "tests", "bench")
#: Modules whose docstring summary still wraps onto its second line, each with why it is let off.
SUMMARY_WRAPS: dict[str, str] = {}  # path -> why its summary may wrap (none may)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of pipeline/, assets/ and schemas/ by dotted name."""
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


@cache
def syntax(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(name: str) -> set[str]:
    """Every dotted name an import statement of module `name` names (`from a import b`: a and a.b), anywhere in it."""
    path = modules()[name]
    tree = syntax(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    never_run = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in never_run:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Module -> the project's modules its imports load: the module named and its packages, less the importer's own
    packages (loaded before it) and itself.
    """
    graph = {}
    for name in modules():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        targets: set[str] = set()
        for imported in imported_names(name):
            parts = imported.split(".")
            targets.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        graph[name] = frozenset(t for t in targets if t in modules() and t not in own and t != name)
    return graph


def closure(starts: Iterable[str]) -> set[str]:
    """The modules loaded by importing `starts` (each with its packages), transitively."""
    graph = import_graph()
    todo = [".".join(s.split(".")[:i]) for s in starts for i in range(1, s.count(".") + 2)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return seen


def import_circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """One circle (a -> b -> ... -> a) through each group of modules that import each other."""
    return [_circle_through(graph, set(group)) for group in strongly_connected(graph)]


def _circle_through(graph: dict[str, frozenset[str]], group: set[str]) -> list[str]:
    """The shortest circle from the group's first module back to it, staying in the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & group):
                if successor == start:
                    return [*paths[node], start]
                if successor not in paths:
                    paths[successor] = [*paths[node], successor]
                    following.append(successor)
        frontier = following
    return sorted(group)


def _relative(name: str) -> str:
    return modules()[name].relative_to(ROOT).as_posix()


# -- import structure ----------------------------------------------------------------------------------------------


def test_no_import_circle() -> None:
    circles = import_circles(import_graph())
    assert not circles, "import circle(s): " + "; ".join(" -> ".join(circle) for circle in circles)


def test_import_circles_are_found() -> None:
    """The circle finder on a small graph: a circle of three beside a tree, and a module importing itself."""
    graph = {
        "a": frozenset({"b"}),
        "b": frozenset({"c", "d"}),
        "c": frozenset({"a"}),
        "d": frozenset(),
        "e": frozenset({"e"}),
    }
    assert import_circles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert import_circles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_function_level_and_submodule_imports_count() -> None:
    # pipeline/cli/commands.py imports the protocol inside command_evaluate, and `from pipeline.cli import commands`
    # (assets/runtime/cli.py) imports the submodule.
    assert "pipeline.evaluation.protocol" in import_graph()["pipeline.cli.commands"]
    assert "pipeline.cli.commands" in import_graph()["assets.runtime.cli"]


def test_pipeline_never_imports_dagster_or_assets() -> None:
    offending = {
        _relative(name): sorted(
            imported for imported in imported_names(name) if imported.split(".")[0].startswith(("dagster", "assets"))
        )
        for name in modules()
        if name.split(".")[0] == "pipeline"
    }
    assert not {path: names for path, names in offending.items() if names}


def test_schemas_never_import_pipeline_or_assets() -> None:
    offending = {
        _relative(name): sorted(
            imported for imported in imported_names(name) if imported.split(".")[0] in ("pipeline", "assets")
        )
        for name in modules()
        if name.split(".")[0] == "schemas"
    }
    assert not {path: names for path, names in offending.items() if names}


def test_scenario_model_loads_no_cli_formats_or_generator() -> None:
    loaded = closure(["pipeline.scenarios.model"])
    heavy = sorted(name for name in loaded if name.startswith(HEAVY_FOR_SCENARIO_MODEL))
    assert not heavy, f"importing pipeline.scenarios.model loads {heavy}"
    assert "pipeline.systems.config" in loaded  # the closure follows the scenario model's imports


# -- sizes and docstrings ------------------------------------------------------------------------------------------


def test_pipeline_top_level_is_a_few_leaves() -> None:
    top_level = sorted(path.name for path in (ROOT / "pipeline").glob("*.py"))
    assert len(top_level) <= MAX_TOP_LEVEL_MODULES, f"pipeline/ has {len(top_level)} top-level modules: {top_level}"


def test_asset_wiring_is_small() -> None:
    wiring = [path for path in (ROOT / "assets").rglob("*.py") if RUNTIME not in path.parents]
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in wiring)
    assert lines < MAX_WIRING_LINES, f"assets/ (without runtime/) is {lines:,} lines"


def test_every_module_starts_with_a_docstring() -> None:
    # ruff's D100 asks every module but a package's __init__ (D104 is off); this asks them all.
    missing = []
    for name, path in modules().items():
        body = syntax(path).body
        docstring = ast.get_docstring(syntax(path), clean=False) if body else None
        if not docstring or not docstring.splitlines()[0].strip():
            missing.append(_relative(name))
    assert not missing, f"modules without a docstring summary on their first line: {missing}"
    # The summary is the docstring's first line alone: a second line, when there is one, is blank (`--help` texts and
    # tools show the first line only).
    wrapped = []
    for folder in ONE_LINE_SUMMARY_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            docstring = ast.get_docstring(syntax(path), clean=False) or ""
            lines = docstring.splitlines()
            if len(lines) > 1 and lines[1].strip() and relative not in SUMMARY_WRAPS:
                wrapped.append(relative)
    assert not wrapped, f"modules whose docstring summary wraps onto a second line: {wrapped}"


# -- code versions -------------------------------------------------------------------------------------------------


def stages_named_in(path: Path) -> set[str]:
    """The stages whose code version a module's assets carry: `table_attributes(model, "<stage>", ...)` and
    `code_version("<stage>", ...)`.
    """
    stages = set()
    for node in ast.walk(syntax(path)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        position = {"table_attributes": 1, "code_version": 0}.get(node.func.id)
        keyword = next((k.value for k in node.keywords if k.arg == "stage"), None)
        argument = node.args[position] if position is not None and len(node.args) > position else keyword
        if position is not None and isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            stages.add(argument.value)
    return stages


def test_stage_entry_points_are_the_asset_modules_of_each_stage() -> None:
    found: dict[str, set[str]] = {}
    for name, path in modules().items():
        if name.startswith("assets.") and name != "assets.metadata":
            for stage in stages_named_in(path):
                found.setdefault(stage, set()).add(name)
    assert found == {stage: set(entry) for stage, entry in STAGE_ENTRY_POINTS.items()}
    assert set(STAGE_SOURCES) == set(STAGE_ENTRY_POINTS)


@pytest.mark.parametrize("stage", sorted(STAGE_ENTRY_POINTS))
def test_stage_sources_cover_what_the_stage_runs(stage: str) -> None:
    graph = import_graph()
    starts = {name for entry in STAGE_ENTRY_POINTS[stage] for name in graph[entry] if name.startswith("pipeline")}
    runs = {_relative(name) for name in closure(starts) if name.split(".")[0] == "pipeline"}
    hashed = {path.relative_to(ROOT).as_posix() for path in stage_files(stage)}
    missing = sorted(runs - hashed - set(NOT_STAGE_SOURCES))
    assert not missing, f"stage {stage} runs modules its code version does not hash: {missing}"
    assert len(runs) > 10  # the closure follows imports beyond the asset modules' own


def test_allow_list_names_existing_modules() -> None:
    assert {path for path in NOT_STAGE_SOURCES if not (ROOT / path).is_file()} == set()


def test_stage_files_are_the_folders_sources() -> None:
    files = [path.relative_to(ROOT).as_posix() for path in stage_files("rate")]
    assert files == sorted(files)
    assert "pipeline/rules/presets/fide-2024.yaml" in files and "pipeline/ingest/registry.py" in files
    assert "schemas/games.py" in files and "pipeline/months.py" in files
    assert "pipeline/scenarios/scenarios.yaml" not in files  # each scenario's definition goes into its own version
    assert not any("__pycache__" in path or path.startswith("pipeline/publish/") for path in files)
    assert len(code_version("rate")) == 12 and code_version("rate") != code_version("rate", "a scenario")
    with pytest.raises(ValueError, match="unknown stage"):
        stage_files("nonsense")


def test_code_version_follows_contents_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same files, same version; a module moved to another folder of the stage, or edited, is a new version."""

    def tree(files: dict[str, str]) -> str:
        for path in tmp_path.rglob("*.py"):
            path.unlink()
        for relative, text in files.items():
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_text(text)
        for cached in (stage_files, code_versions._sources_digest, code_version):
            cached.cache_clear()
        return code_version("ingest", "extra")

    monkeypatch.setattr(code_versions, "_ROOT", tmp_path)
    monkeypatch.setattr(code_versions, "_PIPELINE", tmp_path / "pipeline")
    leaves = {f"pipeline/{name}": name for name in code_versions.LEAF_MODULES}
    base = {**leaves, "schemas/games.py": "games", "pipeline/ingest/registry.py": "read"}
    try:
        first = tree(base)
        assert tree(base) == first
        assert tree({**leaves, "schemas/games.py": "games", "pipeline/formats/read.py": "read"}) != first
        assert tree({**base, "pipeline/ingest/registry.py": "read it"}) != first
        assert tree({**base, "pipeline/engine/period.py": "not an ingest folder"}) == first
    finally:
        for cached in (stage_files, code_versions._sources_digest, code_version):
            cached.cache_clear()


def test_the_folder_map_and_the_readme_name_every_folder_and_leaf() -> None:
    """docs/architecture.md (the folder map) and README's layout section name every folder and top-level leaf of
    pipeline/ and every module of assets/, and nothing that is gone.
    """
    folders = sorted(p.name for p in (ROOT / "pipeline").iterdir() if (p / "__init__.py").is_file())
    leaves = sorted(p.name for p in (ROOT / "pipeline").glob("*.py") if not p.name.startswith("__"))
    stage_modules = sorted(p.name for p in (ROOT / "assets").glob("*.py") if not p.name.startswith("__"))
    folder_map = (ROOT / "docs" / "architecture.md").read_text()
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout") :].split("\n## ", 1)[0]
    assert [f for f in folders if f"| `{f}/` |" not in folder_map] == []
    assert [f for f in leaves + stage_modules if f"`{f}`" not in folder_map] == []
    assert [f for f in folders if f"`{f}/`" not in layout] == []
    named = {name.strip("/") for name in folder_map.split("`")[1::2]}
    held = {path.name for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    gone = sorted(name for name in named if name.endswith(".py") and name not in held)
    assert gone == [], f"docs/architecture.md names modules that do not exist: {gone}"


def test_the_folder_map_names_every_module_in_its_folders_row() -> None:
    """A newcomer finds every module of pipeline/ in its folder's row of docs/architecture.md, and every module of
    assets/runtime/ and schemas/ in the map.
    """
    folder_map = (ROOT / "docs" / "architecture.md").read_text()
    rows = {line.split("`")[1].strip("/"): line for line in folder_map.splitlines() if line.startswith("| `")}
    named = set(folder_map.split("`")[1::2])
    unnamed = [
        f"{folder.name}/{module.name}"
        for folder in sorted((ROOT / "pipeline").iterdir())
        if (folder / "__init__.py").is_file()
        for module in sorted(folder.glob("*.py"))
        if not module.name.startswith("__") and f"`{module.name}`" not in rows.get(folder.name, "")
    ]
    assert unnamed == [], f"docs/architecture.md does not name these modules in their folder's row: {unnamed}"
    others = [
        f"{module.parent.name}/{module.name}"
        for module in sorted([*(ROOT / "assets" / "runtime").glob("*.py"), *(ROOT / "schemas").glob("*.py")])
        if not module.name.startswith("__") and not {module.name, module.stem} & named
    ]
    assert others == [], f"docs/architecture.md does not name these modules: {others}"


#: A path into the project's code folders, wherever the README or docs/ write one ('`pipeline/engine/`',
#: 'tests/test_engine.py::name', 'see bench/workloads.py.'): its trailing punctuation is the sentence's.
_PROJECT_PATH = re.compile(r"(?<![\w./-])((?:pipeline|assets|schemas|tests|bench|examples)/[\w./-]*)")


def _ignored_outputs() -> list[str]:
    """The entries of .gitignore that name a file or folder inside the project (`bench/results.json`): what the
    project's tools write, which the docs may name although a fresh clone does not hold it yet.
    """
    entries = (line.strip() for line in (ROOT / ".gitignore").read_text().splitlines())
    return [entry.strip("/") for entry in entries if "/" in entry.strip("/") and not entry.startswith("#")]


def test_every_path_the_readme_and_docs_name_exists() -> None:
    """A reader who follows a path the README or docs/ give (`pipeline/scenarios/chain.py`, a link to
    docs/rules.md) finds it: no path names a module that was moved, renamed or removed.
    """
    outputs = _ignored_outputs()
    missing = []
    for document in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = document.read_text()
        linked = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)]
        named = [match.rstrip(".,:;") for match in _PROJECT_PATH.findall(text)]
        for path in [*(document.parent / t for t in linked if t and ":" not in t), *(ROOT / n for n in named)]:
            if not path.resolve().is_relative_to(ROOT):  # ../shared: the team's reference files, not a clone's
                continue
            relative = path.resolve().relative_to(ROOT).as_posix()
            if not path.exists() and not any(relative == o or relative.startswith(o + "/") for o in outputs):
                missing.append(f"{document.relative_to(ROOT)}: {relative}")
    assert missing == [], f"the README and docs/ name paths that do not exist: {missing}"
