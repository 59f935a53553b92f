"""One home for every rule: the RuleSet's knobs are read by pipeline/rules/regulations.py only.

Each described, each clause documented.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import polars as pl
import pytest
from pydantic import BaseModel

from pipeline.rules import regulations
from pipeline.rules.model import InitialRating, KPolicy, RulesError, RuleSet, load_rules, resolve_rules

ROOT = Path(__file__).resolve().parents[1]
MODELS = (RuleSet, KPolicy, InitialRating)


def leaf_knobs(model: type[BaseModel] = RuleSet, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every leaf field of a rule set as its path, e.g. ('k', 'elite_from'): a knob added to a model is listed."""
    leaves: list[tuple[str, ...]] = []
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            leaves += leaf_knobs(field.annotation, (*prefix, name))
        else:
            leaves.append((*prefix, name))
    return leaves


#: Leaf fields that are no rule: what a rule set is called, where its values come from (every report naming the
#: rules reads them) and which list it rates (its games are the ones its weights rate).
NOT_KNOBS = {("name",), ("description",), ("source",), ("list_type",)}
KNOBS = [path for path in leaf_knobs() if path not in NOT_KNOBS]
#: Files that may read every knob: the model (its validators; publishes_list_after, the list calendar), the knobs'
#: one home, and the generated rule-set documentation (docs/rules.md), which describes each knob.
HOMES = {"pipeline/rules/model.py", "pipeline/rules/regulations.py", "pipeline/rules/doc.py"}
#: A knob read outside its home, and why. bench/reference.py is not scanned on purpose: the plain-Python
#: reference implements every rule a second time, independently of regulations.py.
READ_ELSEWHERE: dict[tuple[str, str], str] = {}
#: The names the code base gives these objects where no annotation says what a name holds.
CONVENTIONAL_NAMES: dict[str, type[BaseModel]] = {
    "rules": RuleSet,
    "rule_set": RuleSet,
    "policy": KPolicy,
    "initial": InitialRating,
}
RULE_SET_CALLS = {"load_rules", "resolve_rules", "rules_for"}  # calls that return a RuleSet


def _model_named(annotation: ast.expr | None) -> type[BaseModel] | None:
    text = ast.unparse(annotation) if annotation is not None else ""
    return next((model for model in MODELS if re.search(rf"\b{model.__name__}\b", text)), None)


def _model_of(node: ast.expr, names: dict[str, type[BaseModel] | None]) -> type[BaseModel] | None:
    """The rule-set model an expression evaluates to, as far as names, annotations and attributes tell."""
    if isinstance(node, ast.Name):
        return names[node.id] if node.id in names else CONVENTIONAL_NAMES.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _model_of(node.value, names)
        if owner is None:
            return CONVENTIONAL_NAMES.get(node.attr)  # self.rules, self.policy
        field = owner.model_fields.get(node.attr)
        nested = field.annotation if field is not None else None
        return nested if isinstance(nested, type) and issubclass(nested, BaseModel) else None
    if isinstance(node, ast.Call):
        function = node.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        return RuleSet if name in RULE_SET_CALLS else None
    return None


def knob_reads(source: str) -> set[str]:
    """The knobs (dotted paths, e.g. 'k.elite_from') a module's source reads: attribute accesses of a knob's name on
    an expression that is a RuleSet, KPolicy or InitialRating (by annotation, assignment, its model's fields, a
    call of RULE_SET_CALLS, or a CONVENTIONAL_NAMES name).
    """
    tree = ast.parse(source)
    names: dict[str, type[BaseModel] | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if argument.annotation is not None:
                    names[argument.arg] = _model_named(argument.annotation)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = _model_named(node.annotation)
    assignments = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)]
    for _ in range(3):  # a name assigned from a name assigned from a rule set
        for node in assignments:
            assigned = _model_of(node.value, names)
            for target in node.targets:
                if isinstance(target, ast.Name) and assigned is not None:
                    names[target.id] = assigned
    owned: dict[tuple[type[BaseModel], str], str] = {}
    for path in KNOBS:
        owner: type[BaseModel] = RuleSet
        for part in path[:-1]:
            owner = owner.model_fields[part].annotation  # type: ignore[assignment]
        owned[owner, path[-1]] = ".".join(path)
    return {
        owned[model, node.attr]
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and (model := _model_of(node.value, names)) is not None
        and (model, node.attr) in owned
    }


@pytest.mark.parametrize("model", MODELS)
def test_every_rule_set_field_says_what_it_is(model):
    assert [name for name, field in model.model_fields.items() if not field.description] == []


def test_the_guard_covers_every_leaf_knob_of_a_rule_set():
    assert len(KNOBS) >= 35
    assert {"k.elite_from", "initial.pool_months", "initial.min_games", "initial.disregard_zero_first_event"} <= {
        ".".join(path) for path in KNOBS
    }
    assert {path[-1] for path in NOT_KNOBS} <= set(RuleSet.model_fields)


def test_the_guard_finds_a_knob_however_it_is_reached():
    source = """
def f(rules: RuleSet, p: KPolicy, params, entry, scenario):
    initial = rules.initial
    window = initial.pool_months
    k = rules.k
    cap = k.elite_from + p.standard + load_rules("x").floor + scenario.rules_for(m).initial.min_games
    other = params.scale + entry.kind + np.floor(x) + policy.newcomer
    return rules.rounding, (lambda r: r.expectancy)
"""
    assert knob_reads(source) == {
        "initial.pool_months",
        "k.elite_from",
        "k.standard",
        "floor",
        "initial.min_games",
        "k.newcomer",
        "rounding",
    }


def test_the_rule_knobs_are_read_in_one_place():
    readers: dict[tuple[str, str], str] = {}
    for folder in ("pipeline", "assets", "schemas"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in HOMES:
                for knob in knob_reads(path.read_text(encoding="utf-8")):
                    readers[relative, knob] = READ_ELSEWHERE.get((relative, knob), "")
    assert {reader for reader, reason in readers.items() if not reason} == set(), (
        "a rule-set knob is read outside pipeline/rules/regulations.py: give the clause a function there"
    )
    assert set(READ_ELSEWHERE) <= set(readers), "READ_ELSEWHERE names a read that is gone: drop it"


def test_docs_regulations_md_names_only_what_exists():
    """Every backticked `module.function` in docs/regulations.md resolves under pipeline (or is a knob's path, or a
    file that exists).
    """
    knob_paths = {".".join(path) for path in KNOBS}
    named = set(re.findall(r"`([^`\s]+)`", (ROOT / "docs" / "regulations.md").read_text(encoding="utf-8")))
    objects = sorted(name for name in named if "." in name and "/" not in name and name not in knob_paths)
    assert len(objects) >= 25
    for name in objects:
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            try:
                found: object = importlib.import_module(".".join(["pipeline", *parts[:cut]]))
                break
            except ModuleNotFoundError:
                continue
        else:
            raise AssertionError(f"docs/regulations.md names {name}: no module pipeline.{parts[0]}")
        for attribute in parts[cut:]:
            assert hasattr(found, attribute), f"docs/regulations.md names {name}: no {attribute}"
            found = getattr(found, attribute)
    for name in (name for name in named if "/" in name):
        assert list(ROOT.glob(name)), f"docs/regulations.md names {name}, which does not exist"


def test_every_function_of_the_regulations_names_its_source():
    public = [
        getattr(regulations, name)
        for name in dir(regulations)
        if callable(getattr(regulations, name))
        and getattr(getattr(regulations, name), "__module__", "") == regulations.__name__
        and not name.startswith("_")
    ]
    assert len(public) >= 10
    for function in public:
        assert function.__doc__, function.__name__
    documented = (ROOT / "docs" / "regulations.md").read_text(encoding="utf-8")
    for function in public:
        if function.__name__ not in ("describe_rating_difference",):
            assert function.__name__ in documented, (
                f"docs/regulations.md does not say where {function.__name__} applies"
            )


# One line per clause, values worked by hand (the scalachess way).
def frame(**columns) -> pl.DataFrame:
    return pl.DataFrame(columns)


def test_400_point_rule_every_game():
    assert (
        frame(own_rating=[2500], opponent_rating=[2000]).select(regulations.rating_difference(load_rules("fide-2024")))[
            0, 0
        ]
        == 400
    )


def test_350_point_rule_before_july_2009():
    assert (
        frame(own_rating=[2500], opponent_rating=[2000]).select(regulations.rating_difference(load_rules("fide-2008")))[
            0, 0
        ]
        == 350
    )


def test_2650_exemption_from_october_2025_is_one_sided():
    rules = load_rules("fide-2025-10")
    top = frame(own_rating=[2813], opponent_rating=[2400]).select(regulations.rating_difference(rules))[0, 0]
    other = frame(own_rating=[2400], opponent_rating=[2813]).select(regulations.rating_difference(rules))[0, 0]
    assert (top, other) == (413, -400)


def test_table_8_1_2_expected_score_for_400_points_is_92_hundredths():
    assert frame(d=[400]).select(regulations.expected_score(load_rules("fide-2024")))[0, 0] == 92.0


def test_k_times_n_cap_700():  # K 40, 20 games: 40 x 20 = 800 > 700, so K = 700 // 20 = 35
    assert (
        frame(n=[20]).select(regulations.k_times_games_cap(pl.lit(40), pl.col("n"), load_rules("fide-2024")))[0, 0]
        == 35
    )


def test_rounding_half_away_from_zero():
    assert frame(x=[2.5, -2.5, 2.49]).select(regulations.round_half_away(pl.col("x")))["x"].to_list() == [3, -3, 2]


def test_first_rating_2024_two_hypothetical_draws_against_1800():
    # 5 games against 2000 average, 2.5 points: with the two draws n 7, 3.5 points, Ra (10000 + 3600) / 7
    # = 1942.86, p 0.50 -> dp 0, Ru = round(1942.86) = 1943.
    pooled = frame(n_pool=[5], p2_pool=[5], os_pool=[10_000])
    assert pooled.select(regulations.initial_rating(load_rules("fide-2024")))[0, 0] == 1943


def test_floor_1400_in_2024_none_for_plain_elo():
    ratings = frame(rating=[1399, 1400])
    assert ratings.select(regulations.below_floor(pl.col("rating"), load_rules("fide-2024")))["rating"].to_list() == [
        True,
        False,
    ]
    assert ratings.select(regulations.below_floor(pl.col("rating"), load_rules("elo-32")).alias("x"))[
        "x"
    ].to_list() == [False]


#: Where the number 2400 may stand in code: the K policy's default elite_from, and the generator's synthetic FIDE
#: world (its seed list states ever_2400 as FIDE's lists would).
LITERAL_2400 = {"pipeline/rules/model.py", "pipeline/generator/population.py"}


def test_the_elite_threshold_is_the_k_policys_knob_not_a_literal():
    found = set()
    for folder in ("pipeline", "assets", "schemas"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(node, ast.Constant) and node.value == 2400 for node in ast.walk(tree)):
                found.add(path.relative_to(ROOT).as_posix())
    assert found == LITERAL_2400


# -- §8.3.3: K 10 for good from elite_from -------------------------------------------------------------


def test_reached_elite_reads_elite_from_and_keeps_it():
    lists = frame(
        rating=pl.Series([2350, 2290, 2290, None, 2400], dtype=pl.Int32),
        ever_2400=[False, False, True, None, False],
    )
    fide = load_rules("fide-2024").k
    lowered = load_rules("fide-2024", ["k.elite_from=2300"]).k
    assert lists.select(regulations.reached_elite(fide))["ever_2400"].to_list() == [False, False, True, False, True]
    assert lists.select(regulations.reached_elite(lowered))["ever_2400"].to_list() == [True, False, True, False, True]
    # The K of the period follows: 2350 under elite_from 2300 is K 10; 2290 that reached it once stays K 10.
    lists = lists.with_columns(games_total=pl.lit(100), birth_year=pl.lit(1980))
    assert lists.select(regulations.development_coefficient(lowered, 2024).alias("k"))["k"].to_list() == [
        10,
        20,
        10,
        20,
        10,
    ]


def test_a_list_entering_the_engine_is_read_under_the_rule_sets_threshold():
    seed = frame(
        player_id=[1, 2, 3],
        rating=pl.Series([2350, 2350, 2390], dtype=pl.Int32),
        ever_2400=[False, False, False],
        k=pl.Series([None, None, 10], dtype=pl.Int16),
    )
    assert regulations.mark_elite_reached(seed, load_rules("fide-2024").k)["ever_2400"].to_list() == [
        False,
        False,
        True,
    ]
    lowered = load_rules("fide-2024", ["k.elite_from=2300"]).k
    assert regulations.mark_elite_reached(seed, lowered)["ever_2400"].to_list() == [True, True, True]


def test_a_k_stated_under_a_corrected_birth_year_is_decided_again_by_the_birth_year_part_alone():
    """2024 rules, period of 2024 (the junior K to the end of the year of the 18th birthday: born 2006 on)."""
    listed = frame(
        rating=pl.Series([1800, 1800, 1800, 2300, 1800, 1800, 1800], dtype=pl.Int32),
        games_total=pl.Series([50, 50, 10, 50, 50, 50, None], dtype=pl.Int32),
        ever_2400=[False] * 7,
        k=pl.Series([20, 40, 40, 10, 20, None, 25], dtype=pl.Int16),
        birth_year=pl.Series([2012, 1990, 1990, 2012, 1990, 2012, 1991], dtype=pl.Int32),  # the years now
    )
    stated = pl.Series([1990, 2012, 2012, 1990, 1990, 1990, 1990], dtype=pl.Int32)  # the years the K was stated under
    decided = regulations.k_for_corrected_birth_years(listed, stated, load_rules("fide-2024").k, 2024)
    # adult -> junior 40; junior -> adult 20; a newcomer's 40 and the 10 reached stand; an unchanged year, no listed
    # K, or a change the policy's K does not see (1990 -> 1991) leave the list's K.
    assert decided["k"].to_list() == [40, 20, 40, 10, 20, None, 25]
    assert decided.drop("k").equals(listed.drop("k"))
    assert regulations.k_for_corrected_birth_years(listed, stated, load_rules("elo-32").k, 2024).equals(listed)


# -- §7.1.4 and §8.2.1: the newcomer's pool -------------------------------------------------------------


def test_pool_window_26_months_this_one_included():
    entries = frame(month=["2022-03", "2022-04", "2024-05", None])
    # May 2024 and the 25 months before it: April 2022 to May 2024.
    window = regulations.in_pool_window(load_rules("fide-2024"), "2024-05")
    assert entries.select(window)["month"].to_list() == [False, True, True, False]
    short = regulations.in_pool_window(load_rules("fide-2024", ["initial.pool_months=1"]), "2024-05")
    assert entries.select(short)["month"].to_list() == [False, False, True, False]


def test_first_rating_needs_5_games_since_2014_and_9_before():
    pools = frame(n=[4, 5, 8, 9])
    assert pools.select(regulations.enough_games_for_first_rating(pl.col("n"), load_rules("fide-2024")))[
        "n"
    ].to_list() == [False, True, True, True]
    assert pools.select(regulations.enough_games_for_first_rating(pl.col("n"), load_rules("fide-2009")))[
        "n"
    ].to_list() == [False, False, False, True]


def test_a_zero_in_the_first_event_only_is_disregarded():
    from datetime import date

    games = frame(
        player_id=[1, 1, 1, 2, 2, 3, 3, 4, 4],
        # Player 1: 0/2 in A (first), 1 point in B. Player 2: a point in A (first), a zero in B counts.
        # Player 3: A and B start together, A is first by id; 0 in A. Player 4: B starts first, scores 0 there.
        event_id=["A", "A", "B", "A", "B", "B", "A", "A", "B"],
        event_start=[date(2024, 5, 1)] * 7 + [date(2024, 5, 9), date(2024, 5, 2)],
        points_x2=[0, 0, 2, 1, 0, 2, 0, 2, 0],
    )
    assert games.select(regulations.disregarded_first_event(load_rules("fide-2024")).alias("x"))["x"].to_list() == [
        True,
        True,
        False,
        False,
        False,
        False,
        True,
        False,
        True,
    ]
    off = load_rules("fide-2024", ["initial.disregard_zero_first_event=false"])
    assert not games.select(regulations.disregarded_first_event(off).alias("x"))["x"].any()


def test_inactive_after_12_months_without_a_rated_game():
    lists = frame(last_played=["2023-05", "2023-06", "2024-05", None])
    # On the list of period May 2024: last played May 2023 or earlier.
    assert lists.select(regulations.inactive(load_rules("fide-2024"), "2024-05"))["last_played"].to_list() == [
        True,
        False,
        False,
        None,
    ]


@pytest.mark.parametrize(
    ("period", "floor"),
    [
        ("2004-03", 1801),  # GA 1999 handbook §9.21; FIDE's lists of January and April 2004 start at 1801
        ("2007-12", 1801),
        ("2008-01", 1400),  # [U]
        ("2009-07", 1200),
        ("2012-07", 1000),
        ("2024-03", 1400),
    ],
)
def test_fide_historical_floor_by_period(period, floor):
    assert resolve_rules("fide-historical", period).floor == floor


# -- reading rule sets: overrides, extends, schedules, names ------------------------------------


def test_a_mapping_given_to_set_merges_into_the_rule_sets_mapping():
    # Before, `initial={min_games: 9}` replaced `initial` whole: the 2024 formula and cap fell back to the defaults.
    merged = load_rules("fide-2024", ("initial={min_games: 9}",))
    assert (merged.initial.min_games, merged.initial.formula, merged.initial.max_rating) == (
        9,
        "hypothetical-draws",
        2200,
    )
    assert merged == load_rules("fide-2024", ("initial.min_games=9",))
    k = load_rules("fide-2012", ("k={standard: 15}",)).k
    assert (k.standard, k.newcomer, k.junior) == (15, 30, None)
    # A constant K given as a mapping drops the tiers, as `extends` does; the tiers of a K by player come back.
    assert load_rules("fide-2024", ("k={kind: constant, value: 24}",)).k.value == 24
    assert load_rules("elo-32", ("k={kind: fide, standard: 24}",)).k.standard == 24


def test_k_value_on_a_k_by_player_is_refused():
    with pytest.raises(RulesError, match=r"k.value \(24\) does not apply: K is by player"):
        load_rules("fide-2024", ("k.value=24",))
    assert load_rules("elo-32", ("k.kind=fide",)).k.value is None


@pytest.mark.parametrize(
    ("assignment", "problem"),
    [
        ("kappa=-10", "kappa: Input should be greater than or equal to 0"),
        ("weights={classical: -1}", "weights: Value error, weights.classical: a weight is a number from 0"),
        ("weights={classical: 1000}", "weights.classical: a weight is a number from 0"),
        ("weights={classical: true}", "weights.classical: a weight is a number from 0"),
        ("weights={clasical: 0.5}", "unknown time-control class(es) clasical"),
        ("sonas_clamp=[390, -460]", "sonas_clamp must be [low, high] with low < high"),
        ("weights_by_minutes=[[5, -0.1], [120, 1.0]]", "[5, -0.1]: a weight is a number from 0"),
        ("initial.max_rating=0", "initial.max_rating: Input should be greater than 0"),
        ("k=24.9", "k.value: Input should be a valid integer, got a number with a fractional part"),
    ],
)
def test_out_of_range_rule_values_are_refused_naming_the_key(assignment: str, problem: str):
    with pytest.raises(RulesError) as error:
        load_rules("sonas-2002", (assignment,))
    assert problem.removeprefix("weights: Value error, ") in str(error.value)
    assert load_rules("sonas-2002", ("k=24.0",)).k.value == 24


def test_a_file_named_like_a_preset_never_stands_in_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fide-2022").write_text("name: planted\nfloor: 2500\n")
    (tmp_path / "base.yaml").write_text("name: planted\nfloor: 2500\n")
    assert load_rules("fide-2022").name == "fide-2022"
    assert load_rules("fide-2024").floor == 1400  # extends fide-2022, the preset
    for name in ("../presets/fide-2022", f"../../../../../../..{tmp_path}/base", "FIDE-2022"):
        with pytest.raises(RulesError, match="not found|unknown rule set"):
            load_rules(name)


def test_extends_is_read_from_the_files_folder_and_its_errors_name_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.yaml").write_text("extends: fide-2024\nname: base\nfloor: 1300\n")
    (tmp_path / "sub" / "child.yaml").write_text("extends: base.yaml\nname: child\nk: {standard: 24}\n")
    child = load_rules("sub/child.yaml")
    assert (child.floor, child.k.standard, child.name) == (1300, 24, "child")
    (tmp_path / "sub" / "child.yaml").write_text("extends: fide-2099\nname: child\n")
    with pytest.raises(RulesError, match=r"sub/child.yaml: extends: unknown rule set 'fide-2099'.* glicko2"):
        load_rules("sub/child.yaml")
    (tmp_path / "sub" / "child.yaml").write_text("extends: child.yaml\nname: child\n")
    with pytest.raises(RulesError, match="extend each other in a cycle"):
        load_rules("sub/child.yaml")


def test_a_key_given_twice_in_a_rule_file_is_refused(tmp_path: Path):
    (tmp_path / "mine.yaml").write_text("extends: fide-2024\nname: mine\nfloor: 1000\nfloor: 1200\n")
    with pytest.raises(RulesError, match="found the key 'floor' twice"):
        load_rules(str(tmp_path / "mine.yaml"))
    with pytest.raises(RulesError, match="found the key 'min_games' twice"):
        load_rules("fide-2024", ("initial={min_games: 5, min_games: 9}",))


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        # A rule file extending a schedule: its keys were dropped, the file rated as fide-historical.
        ("extends: fide-historical\nname: hist-k24\nk: {standard: 24}\nfloor: 900\n", "is a schedule of rule sets"),
        ("schedule:\n  - {from: '2020-01', rules: fide-2017, sett: {floor: 900}}\n", "schedule entry 1: sett"),
        ("floor: 900\nschedule:\n  - {from: '2020-01', rules: fide-2017}\n", "floor: a schedule holds only"),
        ("schedule: []\n", "schedule: expected a list of entries"),
        (
            "schedule:\n  - {from: '2020-01', rules: fide-2017}\n  - {from: '2020-01', rules: fide-2022}\n",
            "two entries",
        ),
        ("schedule:\n  - {from: '2020-13', rules: fide-2017}\n", "schedule entry 1: from"),
        ("schedule:\n  - {from: '2020-01', rules: mine.yaml}\n", "schedules name each other in a cycle"),
    ],
)
def test_a_schedule_is_refused_where_it_would_be_read_silently_otherwise(tmp_path: Path, body: str, problem: str):
    (tmp_path / "mine.yaml").write_text(body)
    with pytest.raises(RulesError, match=re.escape(problem)):
        resolve_rules(str(tmp_path / "mine.yaml"), "2024-05")


def test_a_schedule_files_entries_are_read_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "k24.yaml").write_text("extends: fide-2024\nname: k24\nk: {standard: 24}\n")
    (tmp_path / "mine.yaml").write_text(
        "name: mine\nschedule:\n  - {from: '2020-01', rules: fide-2017}\n  - {from: '2024-03', rules: k24.yaml, set: "
        "{initial: {min_games: 9}}}\n"
    )
    monkeypatch.chdir(ROOT)
    rules = resolve_rules(str(tmp_path / "mine.yaml"), "2024-05")
    assert (rules.name, rules.k.standard, rules.initial.min_games, rules.initial.max_rating) == ("k24", 24, 9, 2200)
    assert resolve_rules(str(tmp_path / "mine.yaml"), "2021-05").name == "fide-2017"


def test_a_rule_file_named_without_yaml_is_named_in_the_error_and_yaml_in_any_case_is_a_file(tmp_path, monkeypatch):
    from pipeline.rules.model import RulesError, names_a_file
    from pipeline.systems.config import rules_document

    monkeypatch.chdir(tmp_path)
    (tmp_path / "myrules").write_text("extends: fide-2024\nname: mine\n")
    with pytest.raises(RulesError, match=r"a file 'myrules' is in the current folder.*write \./myrules"):
        load_rules("myrules")
    with pytest.raises(ValueError, match=r"a file 'myrules' is in the current folder.*write \./myrules"):
        rules_document("myrules")
    (tmp_path / "Mine.YAML").write_text("extends: fide-2024\nname: mine\n")
    assert names_a_file("Mine.YAML") and load_rules("Mine.YAML").name == "mine"


def test_a_schedule_naming_itself_by_another_spelling_of_its_path_is_a_cycle(tmp_path):
    from pipeline.rules.model import RulesError

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "s.yaml").write_text('name: s\nschedule:\n  - {from: "2020-01", rules: ../d/s.yaml}\n')
    with pytest.raises(RulesError, match="schedules name each other in a cycle"):
        resolve_rules(str(tmp_path / "d" / "s.yaml"), "2021-01")


def test_a_kind_set_over_a_schedule_entry_makes_k_anew():
    # fide-historical's 2011 entry sets k.newcomer=30 (a K by player); a constant K given after it drops that tier.
    for overrides in (["k.kind=constant", "k.value=24"], ["k={kind: constant, value: 24}"]):
        k = resolve_rules("fide-historical", "2012-01", overrides).k
        assert (k.kind, k.value) == ("constant", 24)
