"""Writing the estimates file (`ci_policy.adapters.tuning.estimates`): merged, exact, refused when broken."""

from __future__ import annotations

import pytest

from ci_policy.adapters.tuning.estimates import merge_estimates
from ci_policy.adapters.tuning.propose import LOWER, RAISE, Proposal
from ci_policy.errors import InputError


def proposal(file: str, suite: str, proposed: int, action: str = RAISE) -> Proposal:
    return Proposal(file=file, backend="cuda", suite=suite, samples=(1.0,), q=1.0, current=60.0,
                    proposed=proposed, action=action)


def test_a_new_file_holds_the_proposals_sorted(tmp_path):
    target = tmp_path / ".github" / "ci-estimates.json"
    count = merge_estimates(target, [proposal("tests/e2e/test_b.py", "gpu-a", 300),
                                     proposal("tests/e2e/test_a.py", "gpu-b", 90, LOWER)])
    assert count == 2
    assert target.read_text(encoding="utf-8") == (
        '{\n  "schema": 1,\n  "estimates": [\n'
        '    {\n      "file": "tests/e2e/test_a.py",\n      "suite": "gpu-b",\n      "est_time": 90\n    },\n'
        '    {\n      "file": "tests/e2e/test_b.py",\n      "suite": "gpu-a",\n      "est_time": 300\n    }\n'
        '  ]\n}\n')


def test_earlier_entries_are_kept_and_a_proposal_replaces_its_own(tmp_path):
    target = tmp_path / "estimates.json"
    merge_estimates(target, [proposal("tests/e2e/test_a.py", "gpu-a", 300),
                             proposal("tests/e2e/test_b.py", "gpu-a", 200)])
    assert merge_estimates(target, [proposal("tests/e2e/test_a.py", "gpu-a", 400)]) == 2
    merge_estimates(target, [])
    from ci_policy.model.estimates import parse_estimates

    assert parse_estimates(target.read_text(encoding="utf-8"), str(target)) == {
        ("tests/e2e/test_a.py", "gpu-a"): 400, ("tests/e2e/test_b.py", "gpu-a"): 200}


def test_a_broken_estimates_file_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "estimates.json"
    target.write_text('{"schema": 2, "estimates": []}', encoding="utf-8")
    with pytest.raises(InputError) as info:
        merge_estimates(target, [proposal("tests/e2e/test_a.py", "gpu-a", 300)])
    assert (info.value.code, info.value.path) == ("CP421", str(target))
    assert target.read_text(encoding="utf-8") == '{"schema": 2, "estimates": []}'
