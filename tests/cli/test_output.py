"""What every command writes alike (ci_policy/cli/output.py): the delimiter of a `$GITHUB_OUTPUT` block."""

from __future__ import annotations

import re
import uuid

from ci_policy.cli.output import output_delimiter


def test_the_delimiter_is_a_random_version_4_uuid_as_uuid4_writes_it() -> None:
    delimiters = [output_delimiter() for _ in range(200)]
    assert len(set(delimiters)) == 200
    shape = re.compile(r"ghadelimiter_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
    for delimiter in delimiters:
        assert shape.fullmatch(delimiter)
        parsed = uuid.UUID(delimiter.removeprefix("ghadelimiter_"))
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == delimiter.removeprefix("ghadelimiter_")
