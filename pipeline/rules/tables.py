"""FIDE conversion tables 8.1.1 (score -> dp) and 8.1.2 (difference -> expected score), in integer hundredths.

Copied from the FIDE Rating Regulations (B.02 2024 §8.1; 8.1(a)/(b) in 2014-2022; 10.1a/b in 2003); the
tables have not changed since at least 2003. See ../shared/reference/fide-rules-and-formats.md §1.3.
"""

from __future__ import annotations

import numpy as np

# Table 8.1.2: upper end (inclusive) of each band of the absolute rating difference D, and the
# higher-rated player's expected score PD in hundredths. D > 735 gives 100.
_PD_BAND_UPPER_ENDS = (
    (3, 50),
    (10, 51),
    (17, 52),
    (25, 53),
    (32, 54),
    (39, 55),
    (46, 56),
    (53, 57),
    (61, 58),
    (68, 59),
    (76, 60),
    (83, 61),
    (91, 62),
    (98, 63),
    (106, 64),
    (113, 65),
    (121, 66),
    (129, 67),
    (137, 68),
    (145, 69),
    (153, 70),
    (162, 71),
    (170, 72),
    (179, 73),
    (188, 74),
    (197, 75),
    (206, 76),
    (215, 77),
    (225, 78),
    (235, 79),
    (245, 80),
    (256, 81),
    (267, 82),
    (278, 83),
    (290, 84),
    (302, 85),
    (315, 86),
    (328, 87),
    (344, 88),
    (357, 89),
    (374, 90),
    (391, 91),
    (411, 92),
    (432, 93),
    (456, 94),
    (484, 95),
    (517, 96),
    (559, 97),
    (619, 98),
    (735, 99),
)
PD_MAX_DIFFERENCE = 736  # from here on the higher-rated player's PD is 1.00


def _build_pd_higher() -> np.ndarray:
    table = np.full(PD_MAX_DIFFERENCE + 1, 100, dtype=np.int16)
    lower = 0
    for upper, pd in _PD_BAND_UPPER_ENDS:
        table[lower : upper + 1] = pd
        lower = upper + 1
    return table


#: PD_HIGHER_HUNDREDTHS[d] = expected score of the higher-rated player, hundredths, for |D| = d (d <= 736).
PD_HIGHER_HUNDREDTHS: np.ndarray = _build_pd_higher()

# Table 8.1.1: dp for p = 1.00, 0.99, ..., 0.51 (the lower half is the negative mirror).
_DP_UPPER_HALF = (
    800,
    677,
    589,
    538,
    501,
    470,
    444,
    422,
    401,
    383,
    366,
    351,
    336,
    322,
    309,
    296,
    284,
    273,
    262,
    251,
    240,
    230,
    220,
    211,
    202,
    193,
    184,
    175,
    166,
    158,
    149,
    141,
    133,
    125,
    117,
    110,
    102,
    95,
    87,
    80,
    72,
    65,
    57,
    50,
    43,
    36,
    29,
    21,
    14,
    7,
)


def _build_dp() -> np.ndarray:
    table = np.zeros(101, dtype=np.int16)
    for offset, dp in enumerate(_DP_UPPER_HALF):
        p = 100 - offset
        table[p] = dp
        table[100 - p] = -dp
    return table


#: DP_BY_PERCENT[p] = rating difference dp for a fractional score of p hundredths (0..100).
DP_BY_PERCENT: np.ndarray = _build_dp()


def expected_hundredths(difference: int) -> int:
    """Expected score (hundredths) of a player `difference` points above the opponent (may be negative)."""
    pd = int(PD_HIGHER_HUNDREDTHS[min(abs(difference), PD_MAX_DIFFERENCE)])
    return pd if difference >= 0 else 100 - pd
