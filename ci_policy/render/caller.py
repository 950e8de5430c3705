"""The one caller workflow of an adopting repository (`.github/workflows/ci-policy.yml`), rendered.

- In: the ci-policy commit to pin (40 lowercase hex) and its version (the `# vX.Y.Z` comment
  beside each `uses:`; default this package's), the pipeline's schedules (`cadences.schedules`
  of the configuration: cron -> cadence, in order) and the names of the PR-body pins the access
  policy dispatches to `/rerun-test` (`commands.rerun_test.pins`, e.g. `ci-sglang-pr`).
- Out: `caller_workflow(...)`: the text of the packaged template `ci_policy/templates/ci-policy.yml`
  with the commit in every `uses:` and `ci-policy-ref`, one `schedule` entry per pipeline cron and
  one `workflow_dispatch` input per pin (the gateway sends each pin as an input; GitHub refuses a
  dispatch with an input the workflow does not declare). The example repository's caller is this
  text for its own configuration and policy (a test holds them equal): there is no second copy.
- Refused: as a `ValueError` the caller locates: a commit that is not 40 lowercase hex; a
  pipeline cron equal to the tuning's `TUNE_CRON` (the jobs tell their scheduled runs apart by
  the cron); a cron or pin name that could not be written into the file as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources

from ci_policy import __version__

SHA_RE = re.compile(r"[0-9a-f]{40}")
TUNE_CRON = "17 4 * * 1"
_CRON_RE = re.compile(r"[0-9A-Za-z*/,?#LW-]+(?: [0-9A-Za-z*/,?#LW-]+){4}")
_PIN_RE = re.compile(r"ci-[a-z0-9][a-z0-9-]*")
_INPUT_RE = re.compile(r"^      ([A-Za-z0-9_-]+):$", re.M)
_VERSION_RE = re.compile(r"\d+\.\d+\.\d+[A-Za-z0-9.+-]*")


def template() -> str:
    return resources.files("ci_policy").joinpath("templates/ci-policy.yml").read_text(encoding="utf-8")


def caller_workflow(ref: str, schedules: Sequence[tuple[str, str]], pins: Sequence[str],
                    version: str = __version__) -> str:
    if not SHA_RE.fullmatch(ref):
        raise ValueError(f"{ref!r} is not a full 40-hex commit SHA")
    if not _VERSION_RE.fullmatch(version):
        raise ValueError(f"{version!r} is not a version like 1.2.3")
    lines = []
    for cron, cadence in schedules:
        if not _CRON_RE.fullmatch(cron):
            raise ValueError(f"the schedule {cron!r} is not five cron fields")
        if cron == TUNE_CRON:
            raise ValueError(f"the schedule {cron!r} is the tuning's own cron; the pipeline needs another")
        lines.append(f'    - cron: "{cron}"  # the pipeline, cadence {cadence} (cadences.schedules)')
    inputs = []
    text = template()
    # The dispatch inputs the template declares itself: a pin named like one would declare it
    # twice, which GitHub refuses ("'image_tag' is already defined").
    taken = set(_INPUT_RE.findall(text.split("@PIN_INPUTS@")[0]))
    for pin in pins:
        if not _PIN_RE.fullmatch(pin):
            raise ValueError(f"the pin {pin!r} is not a pin name like ci-<name>")
        name = pin[len("ci-"):].replace("-", "_")
        if name in taken:
            raise ValueError(f"the pin {pin!r} would be the dispatch input {name!r}, which the caller already has")
        taken.add(name)
        inputs += [f"      {name}:",
                   f'        description: "/rerun-test: the {pin} pin from the PR body (checked by the gateway)"',
                   "        type: string", "        required: false", '        default: ""']
    text = text.replace("@PIPELINE_SCHEDULES@\n", "".join(f"{line}\n" for line in lines))
    text = text.replace("@PIN_INPUTS@\n", "".join(f"{line}\n" for line in inputs))
    return text.replace("@CI_POLICY_REF@", ref).replace("@CI_POLICY_VERSION@", version)
