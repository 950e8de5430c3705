"""`python -m ci_policy`: the same as the `ci-policy` command."""

import sys

from .cli import main

sys.exit(main())
