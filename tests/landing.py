"""Landing zones the end-to-end tests write: a PGN game as a federation's dump has it, and files put under raw/."""

from __future__ import annotations

from pathlib import Path


def pgn_game(
    event: str,
    day: str,
    white: int,
    black: int,
    result: str,
    *,
    start: str | None = None,
    elos: tuple[int | None, int | None] = (None, None),
) -> str:
    """One PGN game between FIDE ids at a classical clock; `start` adds EventDate, `elos` WhiteElo and BlackElo."""
    event_date = f'[EventDate "{start}"]\n' if start else ""
    stated = "".join(f'[{side}Elo "{elo}"]\n' for side, elo in zip(("White", "Black"), elos, strict=True) if elo)
    return (
        f'[Event "{event}"]\n[Site "Berlin"]\n[Date "{day}"]\n{event_date}[Round "1"]\n[White "W{white}"]\n'
        f'[Black "B{black}"]\n[Result "{result}"]\n[WhiteFideId "{white}"]\n[BlackFideId "{black}"]\n{stated}'
        f'[TimeControl "5400+30"]\n\n1. d4 d5 {result}\n\n'
    )


def write_raw(store: Path, files: dict[str, str]) -> None:
    """Each text at raw/<key> under the store root (folders made as needed)."""
    for key, text in files.items():
        (store / "raw" / key).parent.mkdir(parents=True, exist_ok=True)
        (store / "raw" / key).write_text(text)
