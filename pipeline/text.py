"""Text from dumps made safe to print: control characters (terminal escapes, bidi overrides) shown, not obeyed."""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the bidi marks and overrides that can make a line read backwards.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_text(text: str) -> str:
    r"""`text` with every control character written as \xNN or \uNNNN (ESC -> \x1b), the rest unchanged."""
    return _UNPRINTABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )
