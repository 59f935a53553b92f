"""Federation codes: three capital letters (GER), as FIDE, the scenarios and the landing zone's folders write them."""

from __future__ import annotations

import re

from schemas.fide_list import FEDERATION_PATTERN

#: A federation code: what a scenario's `restrict` names and what a folder raw/<FED>/ is meant to be called.
FEDERATION_CODE = re.compile(FEDERATION_PATTERN)
