"""ASCII player names, cities and event names for the synthetic federations."""

from __future__ import annotations

import re

import numpy as np

_LAST_PREFIX = (
    "Ander",
    "Bar",
    "Berg",
    "Brand",
    "Carl",
    "Dahl",
    "Eck",
    "Fal",
    "Grim",
    "Hal",
    "Hart",
    "Holm",
    "Jen",
    "Kirk",
    "Lind",
    "Mar",
    "Mor",
    "Nor",
    "Ost",
    "Pet",
    "Ros",
    "Sand",
    "Schr",
    "Stein",
    "Thom",
    "Wal",
    "Whit",
    "Wil",
    "Wolf",
    "Young",
)
_LAST_SUFFIX = (
    "sen",
    "son",
    "mann",
    "er",
    "berg",
    "ley",
    "ton",
    "field",
    "hoff",
    "stad",
    "ke",
    "well",
    "dal",
    "wood",
    "ner",
    "ing",
    "by",
    "rud",
    "man",
    "ford",
)
_FIRST_NAMES: dict[str, dict[bool, tuple[str, ...]]] = {
    "ENG": {
        False: (
            "James",
            "Oliver",
            "Harry",
            "George",
            "Jack",
            "David",
            "Michael",
            "Peter",
            "Richard",
            "Thomas",
            "William",
            "Daniel",
            "Matthew",
            "John",
            "Simon",
            "Andrew",
        ),
        True: (
            "Emily",
            "Sophie",
            "Lucy",
            "Charlotte",
            "Olivia",
            "Grace",
            "Hannah",
            "Jessica",
            "Katherine",
            "Sarah",
            "Alice",
            "Eleanor",
        ),
    },
    "GER": {
        False: (
            "Lukas",
            "Jonas",
            "Felix",
            "Maximilian",
            "Stefan",
            "Thomas",
            "Andreas",
            "Michael",
            "Klaus",
            "Juergen",
            "Matthias",
            "Florian",
            "Tobias",
            "Sebastian",
            "Uwe",
            "Dieter",
        ),
        True: (
            "Anna",
            "Lena",
            "Julia",
            "Sarah",
            "Katrin",
            "Sabine",
            "Elisabeth",
            "Johanna",
            "Marie",
            "Lea",
            "Petra",
            "Jutta",
        ),
    },
    "NOR": {
        False: (
            "Magnus",
            "Jon",
            "Lars",
            "Ole",
            "Anders",
            "Erik",
            "Henrik",
            "Sindre",
            "Aryan",
            "Johan",
            "Kristian",
            "Torbjorn",
            "Espen",
            "Nils",
            "Bjorn",
            "Even",
        ),
        True: ("Ingrid", "Nora", "Kari", "Silje", "Marte", "Ida", "Sofie", "Ellen", "Line", "Hanne", "Tuva", "Astrid"),
    },
    "FRA": {
        False: (
            "Antoine",
            "Julien",
            "Nicolas",
            "Pierre",
            "Laurent",
            "Mathieu",
            "Hugo",
            "Louis",
            "Maxime",
            "Etienne",
            "Olivier",
            "Romain",
        ),
        True: ("Camille", "Manon", "Chloe", "Julie", "Claire", "Sophie", "Marion", "Pauline"),
    },
    "ESP": {
        False: (
            "Javier",
            "Alejandro",
            "Pablo",
            "Daniel",
            "Sergio",
            "Carlos",
            "Miguel",
            "Jorge",
            "Alberto",
            "Raul",
            "Ivan",
            "David",
        ),
        True: ("Lucia", "Maria", "Paula", "Laura", "Marta", "Sara", "Elena", "Carmen"),
    },
    "IND": {
        False: (
            "Arjun",
            "Rohan",
            "Vikram",
            "Aditya",
            "Rahul",
            "Karthik",
            "Pranav",
            "Nihal",
            "Gukesh",
            "Raunak",
            "Sandeep",
            "Harsha",
            "Vidit",
            "Srinath",
        ),
        True: ("Priya", "Ananya", "Divya", "Harika", "Vaishali", "Tania", "Padmini", "Meera"),
    },
    "USA": {
        False: (
            "Michael",
            "Christopher",
            "Joshua",
            "Tyler",
            "Brandon",
            "Ryan",
            "Kevin",
            "Jason",
            "Justin",
            "Eric",
            "Aaron",
            "Nathan",
        ),
        True: ("Jennifer", "Ashley", "Jessica", "Megan", "Alisa", "Carissa", "Irina", "Annie"),
    },
}
CITIES: dict[str, tuple[str, ...]] = {
    "ENG": (
        "London",
        "Hastings",
        "Southend",
        "Manchester",
        "Birmingham",
        "Leeds",
        "Bristol",
        "York",
        "Cambridge",
        "Oxford",
        "Liverpool",
        "Torquay",
        "Blackpool",
        "Bury St Edmunds",
    ),
    "GER": (
        "Berlin",
        "Hamburg",
        "Muenchen",
        "Koeln",
        "Frankfurt",
        "Dresden",
        "Leipzig",
        "Bad Wiessee",
        "Magdeburg",
        "Hannover",
        "Bremen",
        "Stuttgart",
        "Nuernberg",
        "Kassel",
    ),
    "NOR": (
        "Oslo",
        "Bergen",
        "Trondheim",
        "Stavanger",
        "Tromso",
        "Fagernes",
        "Kristiansand",
        "Drammen",
        "Bodo",
        "Hamar",
    ),
    "FRA": ("Paris", "Lyon", "Marseille", "Cappelle", "Avoine", "Bordeaux", "Lille", "Nancy", "Toulouse"),
    "ESP": ("Madrid", "Barcelona", "Sitges", "Benasque", "Linares", "Valencia", "Sevilla", "Bilbao"),
    "IND": (
        "Chennai",
        "Mumbai",
        "Delhi",
        "Kolkata",
        "Pune",
        "Bhubaneswar",
        "Bengaluru",
        "Hyderabad",
        "Nagpur",
        "Kochi",
    ),
    "USA": ("Philadelphia", "Saint Louis", "Chicago", "Reno", "Las Vegas", "Boston", "Dallas", "Seattle"),
}
SWISS_KINDS: dict[str, tuple[str, ...]] = {
    "ENG": ("Open", "Weekend Congress", "Chess Congress", "FIDE Open"),
    "GER": ("Open", "Schachfestival", "Pokalturnier", "Sommeropen"),
    "NOR": ("Open", "Sjakkfestival", "Langturnering"),
    "FRA": ("Open", "Festival", "Open International"),
    "ESP": ("Open", "Open Internacional", "Festival"),
    "IND": ("Open", "Rating Open", "FIDE Rated Open"),
    "USA": ("Open", "Classic", "Chess Festival"),
}
# Rating-restricted sections ("Under 1600" below 2200, else these) and junior events are Swiss events with their own
# names.
SECTION_KINDS = ("Masters", "A-Group", "Challengers")
JUNIOR_KINDS = (
    "Junior Championship",
    "Youth Open",
    "Under 12 Championship",
    "Under 16 Championship",
    "School Championship",
)
TEAM_KINDS = ("Team Championship", "League", "Team Cup")
RAPID_KIND = "Rapid"
BLITZ_KIND = "Blitz"
ROUND_ROBIN_KINDS: dict[str, tuple[str, ...]] = {
    "ENG": ("Closed", "Masters", "Club Championship"),
    "GER": ("Meisterturnier", "Rundenturnier", "Vereinsmeisterschaft"),
    "NOR": ("Lukket turnering", "Mesterturnering"),
    "FRA": ("Tournoi Ferme", "Masters"),
    "ESP": ("Torneo Cerrado", "Magistral"),
    "IND": ("Closed", "Invitational"),
    "USA": ("Invitational", "Closed"),
}


def player_names(rng: np.random.Generator, federations: list[str], female: np.ndarray) -> list[str]:
    """'Lastname, Firstname' for each player, first names drawn by federation and sex."""
    n = len(federations)
    prefix = rng.integers(0, len(_LAST_PREFIX), n)
    suffix = rng.integers(0, len(_LAST_SUFFIX), n)
    first_pick = rng.random(n)
    # One table of every (federation, sex) first-name list, picked by vectorised indexing.
    codes = sorted(_FIRST_NAMES)
    tables = [(code, sex) for code in codes for sex in (False, True)]
    row_of = {code: i for i, code in enumerate(codes)}
    table_index = np.array([row_of[code] for code in federations], dtype=np.int64) * 2 + np.asarray(
        female, dtype=np.int64
    )
    sizes = np.array([len(_FIRST_NAMES[code][sex]) for code, sex in tables])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    all_firsts = np.array([name for code, sex in tables for name in _FIRST_NAMES[code][sex]], dtype=object)
    first = all_firsts[offsets[table_index] + (first_pick * sizes[table_index]).astype(np.int64)]
    last = np.array([p + q for p in _LAST_PREFIX for q in _LAST_SUFFIX], dtype=object)[
        prefix * len(_LAST_SUFFIX) + suffix
    ]
    return (last + ", " + first).tolist()


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def event_name(federation: str, city: str, kind: str, edition: int) -> str:
    """Federation-flavoured tournament name; the edition number makes it unique per city and kind."""
    if federation == "ENG":
        return f"{ordinal(edition)} {city} {kind}"
    if federation in ("GER", "FRA", "ESP"):
        return f"{edition}. {kind} {city}"
    return f"{city} {kind} {edition}"


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_CLUB_PREFIX = ("SC", "SK", "CC", "Chess Club", "Schachfreunde", "Knights")


def team_names(federation: str, teams: int, pick: float) -> list[str]:
    """Distinct club-team names for a team event: '<club prefix> <city>', numbered when a city repeats."""
    cities = CITIES[federation]
    start = int(pick * len(cities))
    prefix = _CLUB_PREFIX[int(pick * 997) % len(_CLUB_PREFIX)]
    names = []
    for t in range(teams):
        city = cities[(start + t) % len(cities)]
        repeat = (t // len(cities)) + 1
        names.append(f"{prefix} {city}" + (f" {repeat}" if repeat > 1 else ""))
    return names
