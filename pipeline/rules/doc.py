"""Renders docs/rules.md: one table of every preset's parameters, with each preset's sources.

Run as python -m pipeline.rules.doc.
"""

from __future__ import annotations

import sys

from pipeline.rules.calendar import describe_reporting_calendar
from pipeline.rules.model import RuleSet, load_rules, preset_names, schedule_of
from pipeline.rules.regulations import describe_rating_difference
from pipeline.rules.time_controls import describe_time_control_eras

PRESET_ORDER = [
    "fide-2008",
    "fide-2009",
    "fide-2012",
    "fide-2014",
    "fide-2017",
    "fide-2022",
    "fide-2024",
    "fide-2025-10",
    "sonas-2002",
    "elo-32",
    *(
        f"fide-{kind}-{era}"
        for kind in ("rapid", "blitz")
        for era in ("2012", "2014", "2017", "2022-10", "2024", "2024-12")
    ),
]


def _k(rules: RuleSet) -> str:
    k = rules.k
    if k.kind == "constant":
        return str(k.value)
    junior = f", junior {k.junior} < {k.junior_below}" if k.junior is not None else ""
    return f"{k.newcomer} (< {k.newcomer_until_games} games){junior} / {k.standard} / {k.elite} (once {k.elite_from})"


def _junior_clause(rules: RuleSet) -> str:
    k = rules.k
    if k.kind == "constant" or k.junior is None:
        return "-"
    return (
        f"to end of year of {k.junior_until_age}th birthday"
        if k.junior_end_of_year
        else f"to {k.junior_until_age}th birthday"
    )


def _expectancy(rules: RuleSet) -> str:
    if rules.expectancy == "fide-table":
        return "table 8.1.2"
    if rules.expectancy == "logistic":
        return f"logistic, scale {rules.scale:g}"
    if rules.expectancy == "elo-davidson":
        return f"Elo-Davidson, kappa {rules.kappa:g}"
    low, high = rules.sonas_clamp
    return f"{rules.sonas_intercept} + {rules.sonas_slope} D, D in [{low}, {high}]"


def _initial(rules: RuleSet) -> str:
    i = rules.initial
    if i.formula == "plus-score":
        text = f"Ra, +{i.plus_score_per_half_point:g} per half point over 50 %, dp below"
    else:
        text = f"Ra + dp with {i.hypothetical_games} draws vs {i.hypothetical_rating}"
    if i.max_rating:
        text += f", max {i.max_rating}"
    return f"{text}; >= {i.min_games} games in {i.pool_months} months"


def _weights(rules: RuleSet) -> str:
    text = ", ".join(f"{name} {weight:g}" for name, weight in rules.weights.items())
    if rules.weights_by_minutes:
        text += "; by minutes to move 40: " + ", ".join(f"{m:g}' {w:g}" for m, w in rules.weights_by_minutes)
    return text


ROWS = [
    ("expected score", _expectancy),
    ("K: newcomer / standard / elite", _k),
    ("junior K until", _junior_clause),
    ("K x n cap", lambda r: str(r.k_games_cap) if r.k_games_cap else "-"),
    ("400-point rule", describe_rating_difference),
    ("floor", lambda r: str(r.floor) if r.floor else "-"),
    ("first rating", _initial),
    ("zero first event disregarded", lambda r: "yes" if r.initial.disregard_zero_first_event else "no"),
    ("lists", lambda r: "monthly" if r.list_months is None else "months " + ", ".join(map(str, r.list_months))),
    ("rounding", lambda r: r.rounding),
    ("inactive after", lambda r: f"{r.inactive_after_months} months"),
    ("game weights", _weights),
    ("seeded from the standard rating", lambda r: "yes" if r.seed_from_standard else "no"),
    ("first event counts from", lambda r: f"{r.initial.first_event_min_points:g} point(s)"),
    (
        "not rated for a gap",
        lambda r: (
            f">= {r.gap_not_rated.difference} with a player > {r.gap_not_rated.above}" if r.gap_not_rated else "-"
        ),
    ),
]


def _table(names: list[str], rules: dict[str, RuleSet]) -> list[str]:
    lines = ["| parameter | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, render_value in ROWS:
        lines.append(f"| {label} | " + " | ".join(render_value(rules[name]) for name in names) + " |")
    return lines


# Each clause under its source and edition; [P] a FIDE text, [S] a secondary source, [U] not verified.
RAPID_AND_BLITZ = [
    "## Rapid and blitz: clauses and readings",
    "",
    "| clause | text | source | preset knob |",
    "|---|---|---|---|",
    '| start | "Tournaments commencing on or after 1st January 2012 may be registered"; first lists 1 July 2012, '
    "monthly | FIDE news 5721 (16 Nov 2011) [P]; chess.com news [S] | schedules from 2012-01, "
    "`list_months: [7]` until June 2012; `events_from: 2012-01-01` in every rapid and blitz preset "
    "(regulations.rated_event) |",
    '| K 2012-2022 | "the K factor used will in all cases be 20"; "K = 20 for RAPID and BLITZ ratings all '
    'players" | news 5721 [P]; the 2014-style K list [S]; real rapid lists of January and February 2013: K 20 on '
    "all 23,566 rows | `k: 20` |",
    "| K x n <= 700 | K 20, or the largest K with K x n <= 700 above 35 games (from the 2017 edition) | "
    "chessexpress.blogspot.com (10 Nov 2021), scacchierando.it [S]; start date [U] | `k_games_cap: 700` from "
    "2017-07 |",
    "| K from 1 October 2022 | as the standard list: 40 / 20 / 10, juniors 40 | scacchierando.it, "
    "vietnamchess.org.vn [S]; B.02 Rapid and Blitz 2024 §7.3.3 [P] | `fide-rapid-2022-10` |",
    '| a standard rating seeds | "their initial rating on both of the new lists will be that rating" (2012); '
    '"If an unrated player has a standard rating at the beginning of a rapid or blitz tournament, their standard '
    'rating is used ... Such a player is considered to be rated" (2024 §7.2.1) | news 5721 [P]; B.02 Rapid and '
    "Blitz 2024 §7.2.1 [P]; 2014-2022 texts [U], practice as 2012 (ecforum 2012, ssmanhem 2022) [S] | "
    "`seed_from_standard` (regulations.seeded_from_standard) |",
    '| first event | "score at least one point" in the first event (2012; the 2017-2021 text as read in 2021); '
    'from March 2024 as standard: "If an unrated player scores zero in their first event this score is '
    'disregarded" | englishchess.org.uk (2011), chessexpress (2021) [S]; B.02 Rapid and Blitz 2024 §7.2.2 [P] | '
    "`initial.first_event_min_points` |",
    "| first ratings | the standard rules of the time: 9 games until June 2014, 5 from July 2014; two draws "
    "against 1800 and at most 2200 from March 2024 | englishchess (2011) [S]; B.02 Rapid and Blitz 2024 §6.1.4, "
    "§7.2.3-7.2.5 [P] | `initial` as the standard preset of the era |",
    '| rating difference | "same as currently used" (2012: the 400-point rule); "The maximum difference between '
    'two players rating is 735, rather than 400" (2017-2021); 400 in every game, no 2650 exemption (2024) | '
    "news 5721 [P]; chessexpress (2021) [S]; B.02 Rapid and Blitz 2024 §7.3.1 [P] | `cap_difference` |",
    '| gap not rated | "Effective from 1 December 2024: Games played between players with a rating difference of '
    "600 points or more shall not be rated if at least one of the players is rated above 2600 on the relevant "
    'list." | B.02 Rapid and Blitz 2024 §7.3.1 [P] | `gap_not_rated` (regulations.gap_not_rated) |',
    "| floor | 1200, then 1000 from July 2012; 1400 from March 2024 | englishchess (2011) [S]; B.02 Rapid and "
    "Blitz 2024 §6.1.4 [P] | `floor` |",
    "",
    "Points the sources leave open, and the reading chosen:",
    "",
    "| question | reading chosen | why |",
    "|---|---|---|",
    "| 400 or 735 points, July 2014 - February 2024 | 400 until June 2017, 735 from July 2017 (no cap in effect: "
    "table 8.1.2 gives 1.00 beyond 735) | the only explicit statement reads the 2017-2021 text; nothing is "
    "known of the 2014 text |",
    "| an event's start (news 5721: events commencing on or after 1 January 2012) | the game's `event_start` (a "
    "dump without one: its event's first dated game, else the day of the game; undated: the first day of its "
    "month folder); an event started in December 2011 and reported in January 2012 is rated on neither list "
    "(weight 0) | the news rates tournaments by their start; a game of a late December round is part of its event |",
    "| which standard list seeds | the standard list in force during the period (the list of the period before) | "
    "2024 §7.2.1 names the rating at the tournament's beginning; the period's list in force is that rating for an "
    "event within the month |",
    "| a seeded player's K | K 20 until September 2022; from October 2022 the K tiers in the order of the standard "
    "list (regulations.development_coefficient), the standard rating counting as the player's rating: 10 when it "
    "has reached 2400 (a player seeded at 2550 in May 2024 has K 10), else junior 40, else the newcomer's 40 until "
    '30 games on the list | 2024 §7.2.1: the standard rating is used and "such a player is considered to be '
    'rated"; §7.3.3 gives K 40 to a player new to the list and K 10 once the published rating has reached 2400, '
    "without saying which wins for a new player at 2400 or more: the standard list's order (10 first) is kept [U] |",
    "| a seeded player's pool of unrated games | dropped: the player is rated from the seed on | 2024 §7.2.1: "
    '"7.2.2 to 7.2.5 below do not apply" |',
    "| the 600-point rule: for whom | for both players (the game is not rated); 600 counts, 2600 does not; the "
    'ratings used for the game | "Games ... shall not be rated"; "600 points or more"; "above 2600" |',
    '| the 600-point rule: from when | games of the periods from December 2024 | "Effective from 1 December '
    '2024"; the event-start reading would need the calendar of issue 36 |',
    "| the one-time lift of 1 October 2022 (rapid and blitz more than 100 below standard raised to standard - 100) | "
    "not applied by the presets | a one-time event of the list, reported by secondary sources only [S] |",
    "| three rated opponents in the first event (2012) | not modelled, as for the standard list before 2014 | "
    "englishchess (2011) [S] |",
    "| 15 rapid / 30 blitz rounds a day; different playing times not rated | not checked | the dumps give "
    "rounds and clocks per event, not per day and player |",
    "",
]


def render() -> str:
    presets = [name for name in PRESET_ORDER if name in preset_names()]
    presets += [n for n in preset_names() if n not in presets and schedule_of(n) is None]
    rules = {name: load_rules(name) for name in presets}
    lines = [
        "# Rule-set presets",
        "",
        "National federations' own systems (US Chess, DWZ, ECF) are documented clause by clause in "
        "[systems.md](systems.md).",
        "",
        "Generated from `pipeline/rules/presets/*.yaml` by `python -m pipeline.rules.doc > docs/rules.md`",
        "(a test keeps it current). Sources per preset are below the table; `[U]` marks a value the",
        "reference could not verify, chosen and documented here and in the preset's YAML comments.",
        "",
        "## The standard list",
        "",
        *_table([name for name in presets if rules[name].list_type == "standard"], rules),
        "",
        "## The rapid and blitz lists",
        "",
        "FIDE's rapid and blitz regulations rate both lists alike: each `fide-blitz-*` preset is its `fide-rapid-*`",
        "namesake rating blitz games instead of rapid ones. The clauses, their sources and the readings chosen are",
        'under "Rapid and blitz: clauses and readings" below.',
        "",
        *_table([name for name in presets if rules[name].list_type == "rapid"], rules),
        "",
        "## Sources",
        "",
    ]
    for name in presets:
        lines.append(f"- **{name}**: {rules[name].description}. Source: {rules[name].source}.")
    lines += ["", "## Schedules", ""]
    for name in preset_names():
        schedule = schedule_of(name)
        if schedule:
            lines.append(
                f"**{name}** (period = month of the games; its list is FIDE's list of the 1st of the next month):"
            )
            lines.append("")
            lines.append("| from period | rules | overrides |")
            lines.append("|---|---|---|")
            lines += [f"| {start} | {rules_name} | {', '.join(sets) or '-'} |" for start, rules_name, sets in schedule]
            lines.append("")
    lines += [
        "## K and the list a period starts from",
        "",
        "A list's `k` is the K of the next period (FIDE's convention). Every list that enters the engine",
        "(a seed list, a FIDE list file, `rate-period --list`, the previous period's list) is read the same way",
        "(`pipeline/rules/regulations.py`: `development_coefficient`, `reached_elite`, `mark_elite_reached`,",
        "`k_from_previous_list`):",
        "",
        '- **An empty `games_total` means established.** FIDE B.02 2024 §8.3.3 gives K 40 to a player "new',
        '  to the rating list until they have completed events with at least 30 games"; a rated player whose',
        "  count the list does not give is not new: K 20 (or junior 40, or elite 10), never the newcomer's 40.",
        "  An unrated player's empty count is 0.",
        "- **A list K equal to the elite K means 2400 was reached.** FIDE B.02 2024 §8.3.3 (2014 and 2022",
        "  texts alike): \"K = 10 once a player's published rating has reached 2400 and remains at that level",
        '  subsequently, even if the rating drops below 2400". A player listed with K 10 below 2400 keeps',
        "  K 10 in every later period (`ever_2400` is set). Only for a tiered policy whose elite K differs",
        "  from its other tiers.",
        "- **`ever_2400` means the rule set's `k.elite_from` was reached** (2400 in every preset; the column",
        "  keeps FIDE's name). A list read without a rule set (a seed list, a FIDE list file) states only what",
        "  its file says: the rule set that rates it sets the flag where the rating has reached its",
        "  `elite_from`, and the flag stays, so under `--set k.elite_from=2300` a player listed at 2350 keeps",
        "  K 10 after dropping below 2300.",
        "- **A constant-K rule set uses its own K** (`sonas-2002` 24, `elo-32` 32), whatever K the list states:",
        "  that K was set under other rules.",
        (
            "- **A tiered (FIDE) policy honours the list's K** for the period (docs/regulations.md, K from the "
            'list: "take K from'
        ),
        '  the previous list"), before the K x n <= 700 reduction; the policy decides only where the list',
        "  gives none, and for the next list's K.",
        "",
        *RAPID_AND_BLITZ,
        describe_time_control_eras(),
        "",
        describe_reporting_calendar(),
        "## Choices where the sources are silent",
        "",
        "| question | choice |",
        "|---|---|",
        "| floor before July 2009 | 1801 before 2008 (GA 1999 handbook §9.21, delisted below 1801 [V]; FIDE's lists "
        "of January and April 2004 start at 1801; the 1990s too, though it was higher then [U]), 1400 from 2008 [U] "
        "(lowered in steps in the 2000s, when is not known; 1200 from July 2009) |",
        "| newcomer pooling before 2014 | 26 months [U] (2003 text: the same and next 7 periods) |",
        "| per-event newcomer conditions before 2014 (3 rated opponents, 1 point) | not modelled [U] |",
        "| newcomer bonus after K 30 (2011) | 12.5 per half point kept [U] |",
        "| floor 1200 -> 1000 | with monthly lists, July 2012 [U] |",
        "| K x n <= 700 | from July 2017 with the 2017 regulations [U: 'since September 2017'] |",
        "| junior clause 2017-2021 | the 2014 wording [U] |",
        '| junior K in the 2014 text (§8.56: "K = 40 for all players until their 18th birthday, as long as '
        'their rating remains under 2300"; samara-chess.ru, chesselo.com [S]) | lists give the birth year '
        "only: a junior in the periods of the years before the year of the 18th birthday, not in that year "
        "(`junior_end_of_year: false`, regulations.development_coefficient): a player born in 1997 has the "
        'adult K in every period of 2015. The 2022 text ("until the end of the year of their 18th '
        'birthday") is the other reading; OPEN [U] |',
        '| the 2022 once-per-event 400-point rule (B.02 2022 §8.3.1: "In any tournament, a player may '
        "benefit from only one upgrade under this rule, for the game in which the rating difference is "
        'greatest.") | each player, the higher- and the lower-rated alike, has the difference capped in '
        "their one game of the event with the greatest difference and the real difference in the others "
        "(regulations.once_per_event_cap). The cap benefits only the higher-rated player (it lifts the "
        "opponent's rating); the other reading caps the lower-rated player in every game, as the clause's "
        "first sentence says. OPEN [U] |",
        "| rounding before 2024 | once per period [U] |",
        "| p to hundredths for table 8.1.1 at .xx5 | half up [U] |",
        "| compression rounding | 0.4 x (2000 - R) to the nearest integer, halves away from zero [U] |",
        "| closing dates (7 days, later 3 days before the list) | the reporting calendar above |",
        "| months without a list before July 2012 | list carried unchanged; games rated on the next list |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
