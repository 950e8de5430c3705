"""The trusts a head commit may have: `Trust` and `TRUST_VALUES`.

- In: nothing.
- Out: `Trust` (the type: `trusted`, `untrusted`, `approved`) and `TRUST_VALUES`, its values in
  that order. Kept apart from `plan.trust`, which decides a pull request's trust, so that a
  plan, which is given a trust, imports none of that decision's types.
- Refused: nothing: constants.
"""

from __future__ import annotations

from typing import Literal, get_args

Trust = Literal["trusted", "untrusted", "approved"]
TRUST_VALUES: tuple[str, ...] = get_args(Trust)
