"""The reusable scheduled-tuning workflow (.github/workflows/tune.yml) and the example's weekly
caller (the `tune` job of examples/gpu-repo/.github/workflows/ci-policy.yml).

- Structure: `workflow_call` only, the CONTRACT inputs plus `workflow`, `runs`, `history-runs`
  and `estimates-file`, two optional secrets (`metrics-store-read-url`, `metrics-store-url`);
  the job `tune` with exactly `actions: read`, `contents: write` and `pull-requests: write`, the
  job `history` (only on the caller's schedule) with `actions: read` importing the pipeline
  runs' artifacts into the writing store, the job `report` after it with `contents: read` and
  `issues: write` (the weekly CI health report, from the store); ci_policy
  checked out at the pinned commit into `.ci-policy-src` and installed by its setup action; the
  default branch checked out as data into `repo` (never run); every untrusted value reaches
  `run:` through `env:`; actions pinned by SHA.
- The caller: its own weekly cron (no other job runs on it), the reusable workflow and
  `ci-policy-ref` pinned to the same commit, only inputs the workflow declares (the same
  table `ci-policy lint` checks callers with).
- zizmor with each persona, the workflow schema and shellcheck cover both files with every
  other workflow (tests/test_workflow_lint.py; the suppressions, one per job, are listed there).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ci_policy.model.workflows import INPUTS

ROOT = Path(__file__).resolve().parents[1]
TUNE = ROOT / ".github" / "workflows" / "tune.yml"
CALLER = ROOT / "examples" / "gpu-repo" / ".github" / "workflows" / "ci-policy.yml"
SHA = re.compile(r"[0-9a-f]{40}")


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True)  # YAML 1.1 reads the key `on` as true
    return doc


def steps() -> list[dict]:
    return load(TUNE)["jobs"]["tune"]["steps"]


def test_the_reusable_workflow_takes_the_contract_inputs():
    doc = load(TUNE)
    assert list(doc["on"]) == ["workflow_call"]
    inputs = doc["on"]["workflow_call"]["inputs"]
    assert {name: (spec["type"], spec["required"], spec.get("default")) for name, spec in inputs.items()} == {
        "ci-policy-ref": ("string", True, None),
        "ci-policy-repository": ("string", False, "ci-policy/ci-policy"),
        "workflow": ("string", True, None),
        "runs": ("number", False, 10),
        "history-runs": ("number", False, 200),
        "estimates-file": ("string", False, ".github/ci-estimates.json"),
        "python": ("string", False, "python3"),
    }
    assert tuple(inputs) == INPUTS["tune"]  # the table lint checks callers against
    # The read-only store URL the health report is made from, and the writing one the history is imported into;
    # both optional.
    assert doc["on"]["workflow_call"]["secrets"] == {
        "metrics-store-read-url": {
            "description": "Read-only metric store URL holding the test history; the weekly CI health report is made "
                           "from it", "required": False},
        "metrics-store-url": {
            "description": "Writing metric store URL: on the schedule, the pipeline runs' test history is imported "
                           "into it", "required": False}}


def test_least_privilege_and_one_job():
    doc = load(TUNE)
    assert doc["permissions"] == {}
    assert list(doc["jobs"]) == ["tune", "history", "report"]
    job = doc["jobs"]["tune"]
    assert job["permissions"] == {"actions": "read", "contents": "write", "pull-requests": "write"}
    assert job["runs-on"] == "ubuntu-latest"
    report = doc["jobs"]["report"]
    assert report["permissions"] == {"contents": "read", "issues": "write"}
    assert report["runs-on"] == "ubuntu-latest"
    # After the import, whether it ran (the schedule), was skipped (a dispatch) or failed.
    assert (report["needs"], report["if"]) == ("history", "${{ !cancelled() }}")
    history = doc["jobs"]["history"]
    assert history["permissions"] == {"actions": "read"}
    assert history["if"] == "github.event_name == 'schedule'" and "needs" not in history
    # A literal group: one tuning at a time in the repository, whatever the caller's name.
    assert doc["concurrency"] == {"group": "ci-policy-tune", "cancel-in-progress": False}


def test_ci_policy_is_installed_from_the_pinned_commit_and_the_checkout_is_only_data():
    s = steps()
    uses = [(step.get("uses"), step.get("with")) for step in s if "uses" in step]
    assert uses == [
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
         {"repository": "${{ inputs.ci-policy-repository }}", "ref": "${{ inputs.ci-policy-ref }}",
          "path": ".ci-policy-src", "persist-credentials": False}),
        ("./.ci-policy-src/.github/actions/setup", {"extras": "github,tune", "python": "${{ inputs.python }}"}),
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
         {"ref": "${{ github.event.repository.default_branch }}", "path": "repo", "persist-credentials": False}),
    ]
    # The pinned ref is checked before anything is checked out.
    assert "CI_POLICY_REF" in s[0]["env"] and "^[0-9a-f]{40}$" in s[0]["run"]
    [tune] = [step for step in s if "ci-policy tune" in step.get("run", "")]
    assert tune["run"] == (
        'ci-policy tune --repo repo --github-runs "$RUNS" --workflow "$PIPELINE_WORKFLOW" '
        '--write-estimates "repo/$ESTIMATES_FILE" --open-pr --csv "$RUNNER_TEMP/ci-policy-tune-evidence.csv"')
    assert tune["env"] == {"GITHUB_TOKEN": "${{ github.token }}", "PIPELINE_WORKFLOW": "${{ inputs.workflow }}",
                           "RUNS": "${{ inputs.runs }}", "ESTIMATES_FILE": "${{ inputs.estimates-file }}"}
    for step in s:
        assert "${{" not in step.get("run", "")
        assert "repo/" not in (step.get("uses") or "")
        # Nothing of the checkout is executed: `repo` is only ever an argument of ci-policy.
        assert not re.search(r"(^|[\s;&|(])(\./)?repo/\S*\.(sh|py)\b", step.get("run", ""))


def test_the_report_job_publishes_the_health_report_from_the_store_given_as_a_secret():
    s = load(TUNE)["jobs"]["report"]["steps"]
    assert [(step.get("uses"), step.get("with")) for step in s if "uses" in step] == [
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
         {"repository": "${{ inputs.ci-policy-repository }}", "ref": "${{ inputs.ci-policy-ref }}",
          "path": ".ci-policy-src", "persist-credentials": False}),
        ("./.ci-policy-src/.github/actions/setup", {"extras": "github,postgres", "python": "${{ inputs.python }}"}),
        # The default branch's configuration prices the stages and names the quarantine entries.
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
         {"ref": "${{ github.event.repository.default_branch }}", "path": "repo", "persist-credentials": False}),
    ]
    assert s[0]["run"] == steps()[0]["run"] and s[0]["env"] == steps()[0]["env"]  # the same pinned-ref check
    publish = s[-1]
    # The store URL and the token reach the shell through `env:` only, never the command line.
    assert publish["env"] == {"CI_POLICY_DATABASE_URL": "${{ secrets.metrics-store-read-url }}",
                              "GITHUB_TOKEN": "${{ github.token }}"}
    assert publish["run"] == (
        'if [ -z "$CI_POLICY_DATABASE_URL" ]; then\n'
        '  echo "No CI health report: pass the secret metrics-store-read-url (the metric store holding the test '
        'history) to tune.yml." >> "$GITHUB_STEP_SUMMARY"\n'
        "  exit 0\n"
        "fi\n"
        'ci-policy report --repo repo --since 30d --format markdown --publish-issue >> "$GITHUB_STEP_SUMMARY"\n')
    for step in s:
        assert "${{" not in step.get("run", "")


def test_the_history_job_imports_the_pipeline_runs_into_the_writing_store_on_the_schedule():
    s = load(TUNE)["jobs"]["history"]["steps"]
    assert [(step.get("uses"), step.get("with")) for step in s if "uses" in step] == [
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
         {"repository": "${{ inputs.ci-policy-repository }}", "ref": "${{ inputs.ci-policy-ref }}",
          "path": ".ci-policy-src", "persist-credentials": False}),
        ("./.ci-policy-src/.github/actions/setup", {"extras": "github,postgres", "python": "${{ inputs.python }}"}),
    ]  # no checkout of the repository: the artifacts are the only input, read as data
    assert s[0]["run"] == steps()[0]["run"] and s[0]["env"] == steps()[0]["env"]  # the same pinned-ref check
    imported = s[-1]
    # The writing store URL and the token reach the shell through `env:` only, never the command line.
    assert imported["env"] == {"CI_POLICY_DATABASE_URL": "${{ secrets.metrics-store-url }}",
                               "GITHUB_TOKEN": "${{ github.token }}", "PIPELINE_WORKFLOW": "${{ inputs.workflow }}",
                               "HISTORY_RUNS": "${{ inputs.history-runs }}"}
    assert imported["run"] == (
        'if [ -z "$CI_POLICY_DATABASE_URL" ]; then\n'
        '  echo "No test history imported: pass the secret metrics-store-url (the writing metric store URL) to '
        'tune.yml." >> "$GITHUB_STEP_SUMMARY"\n'
        "  exit 0\n"
        "fi\n"
        'ci-policy history import --github-runs "$HISTORY_RUNS" --workflow "$PIPELINE_WORKFLOW"\n')
    for step in s:
        assert "${{" not in step.get("run", "")


def test_external_actions_are_pinned_by_sha_with_a_version_comment():
    text = TUNE.read_text()
    for line in text.splitlines():
        match = re.search(r"uses: ([^\s#]+)", line)
        if match and not match.group(1).startswith("./"):
            ref = match.group(1).split("@", 1)[1]
            assert SHA.fullmatch(ref), line
            assert re.search(r"# v\d+\.\d+\.\d+$", line), line


def test_the_example_caller_is_weekly_pinned_and_consistent():
    doc = load(CALLER)
    assert {"cron": "17 4 * * 1"} in doc["on"]["schedule"]
    assert doc["permissions"] == {}
    job = doc["jobs"]["tune"]
    assert job["if"] == "github.event_name == 'schedule' && github.event.schedule == '17 4 * * 1'"
    uses, ref = job["uses"].split("@")  # the `# v0.1.0` comment is YAML, not part of the value
    assert uses == "ci-policy/ci-policy/.github/workflows/tune.yml"
    assert re.fullmatch(r"[0-9a-f]{40}", ref)
    assert job["with"]["ci-policy-ref"] == ref
    assert f'"{ref}"' in CALLER.read_text()  # quoted: a string
    assert set(job["with"]) <= set(INPUTS["tune"])
    assert job["with"]["workflow"] == CALLER.name  # the scheduled runs of this same file
    assert job["permissions"] == {"actions": "read", "contents": "write", "pull-requests": "write",
                                  "issues": "write"}
    # The pinned commit's tune.yml declares no secret yet (tests/test_workflow_lint.py checks what it holds).
    assert "secrets" not in job


def test_lint_finds_the_example_caller_consistent():
    from ci_policy.model.lint import lint

    report = lint(ROOT / "examples" / "gpu-repo")
    assert [d for d in report.errors if d.code is not None and d.code.startswith("CP6")] == []
