"""ASCII player names, cities and event names for the synthetic federations."""

from __future__ import annotations

import re

import numpy as np

_LAST_PREFIX = (
    "Ander", "Bar", "Berg", "Brand", "Carl", "Dahl", "Eck", "Fal", "Grim", "Hal", "Hart", "Holm",
    "Jen", "Kirk", "Lind", "Mar", "Mor", "Nor", "Ost", "Pet", "Ros", "Sand", "Schr", "Stein",
    "Thom", "Wal", "Whit", "Wil", "Wolf", "Young",
)
_LAST_SUFFIX = (
    "sen", "son", "mann", "er", "berg", "ley", "ton", "field", "hoff", "stad", "ke", "well",
    "dal", "wood", "ner", "ing", "by", "rud", "man", "ford",
)
_FIRST_NAMES: dict[str, dict[bool, tuple[str, ...]]] = {
    "ENG": {
        False: ("James", "Oliver", "Harry", "George", "Jack", "David", "Michael", "Peter", "Richard",
                "Thomas", "William", "Daniel", "Matthew", "John", "Simon", "Andrew"),
        True: ("Emily", "Sophie", "Lucy", "Charlotte", "Olivia", "Grace", "Hannah", "Jessica",
               "Katherine", "Sarah", "Alice", "Eleanor"),
    },
    "GER": {
        False: ("Lukas", "Jonas", "Felix", "Maximilian", "Stefan", "Thomas", "Andreas", "Michael",
                "Klaus", "Juergen", "Matthias", "Florian", "Tobias", "Sebastian", "Uwe", "Dieter"),
        True: ("Anna", "Lena", "Julia", "Sarah", "Katrin", "Sabine", "Elisabeth", "Johanna",
               "Marie", "Lea", "Petra", "Jutta"),
    },
    "NOR": {
        False: ("Magnus", "Jon", "Lars", "Ole", "Anders", "Erik", "Henrik", "Sindre", "Aryan",
                "Johan", "Kristian", "Torbjorn", "Espen", "Nils", "Bjorn", "Even"),
        True: ("Ingrid", "Nora", "Kari", "Silje", "Marte", "Ida", "Sofie", "Ellen", "Line",
               "Hanne", "Tuva", "Astrid"),
    },
}
CITIES: dict[str, tuple[str, ...]] = {
    "ENG": ("London", "Hastings", "Southend", "Manchester", "Birmingham", "Leeds", "Bristol", "York",
            "Cambridge", "Oxford", "Liverpool", "Torquay", "Blackpool", "Bury St Edmunds"),
    "GER": ("Berlin", "Hamburg", "Muenchen", "Koeln", "Frankfurt", "Dresden", "Leipzig", "Bad Wiessee",
            "Magdeburg", "Hannover", "Bremen", "Stuttgart", "Nuernberg", "Kassel"),
    "NOR": ("Oslo", "Bergen", "Trondheim", "Stavanger", "Tromso", "Fagernes", "Kristiansand", "Drammen",
            "Bodo", "Hamar"),
}
SWISS_KINDS: dict[str, tuple[str, ...]] = {
    "ENG": ("Open", "Weekend Congress", "Chess Congress", "FIDE Open"),
    "GER": ("Open", "Schachfestival", "Pokalturnier", "Sommeropen"),
    "NOR": ("Open", "Sjakkfestival", "Langturnering"),
}
RAPID_KIND = "Rapid"
ROUND_ROBIN_KINDS: dict[str, tuple[str, ...]] = {
    "ENG": ("Closed", "Masters", "Club Championship"),
    "GER": ("Meisterturnier", "Rundenturnier", "Vereinsmeisterschaft"),
    "NOR": ("Lukket turnering", "Mesterturnering"),
}


def player_names(rng: np.random.Generator, federations: list[str], female: np.ndarray) -> list[str]:
    """'Lastname, Firstname' for each player, first names drawn by federation and sex."""
    n = len(federations)
    prefix = rng.integers(0, len(_LAST_PREFIX), n)
    suffix = rng.integers(0, len(_LAST_SUFFIX), n)
    first_pick = rng.random(n)
    names = []
    for i in range(n):
        firsts = _FIRST_NAMES[federations[i]][bool(female[i])]
        first = firsts[int(first_pick[i] * len(firsts))]
        names.append(f"{_LAST_PREFIX[prefix[i]]}{_LAST_SUFFIX[suffix[i]]}, {first}")
    return names


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def event_name(federation: str, city: str, kind: str, edition: int) -> str:
    """Federation-flavoured tournament name; the edition number makes it unique per city and kind."""
    if federation == "ENG":
        return f"{ordinal(edition)} {city} {kind}"
    if federation == "GER":
        return f"{edition}. {kind} {city}"
    return f"{city} {kind} {edition}"


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
