"""Where the configuration is read from when no path is named.

- In: nothing.
- Out: `DEFAULT_CONFIG`, the path relative to the checkout root. Kept apart from the
  sections so that a command that only names the path imports no table and no PyYAML.
- Refused: nothing: a constant; the loader refuses what it finds at the path.
"""

from __future__ import annotations

DEFAULT_CONFIG = ".github/ci-policy.yml"
