"""Flaky tests, found in the test history: a pure function over `Outcome` rows.

- In: the attempts of a window (`model.outcomes.Outcome`, any order), the repository
  (`OWNER/REPO`, None for no links) and the server URL the run links start with.
- Out: `flaky_runs(outcomes)`: the runs each file was flaky in, by the two rules below;
  `flaky_files(...)`: one `FlakyFile` per file that was flaky at least once, highest flake
  rate first (then most flaky runs, then the file's name): the runs it ran in, the runs it was
  flaky in, its flake rate (flaky runs / runs), the first and last flaky run with their links
  (`RUN_URL`), and how many of its flaky runs were retries or the same commit failing elsewhere.
- A run is a workflow run id: its attempts and its re-runs (`run_attempt`) together.
- A file is flaky in a run when, in that run, an attempt of it did not pass and a later
  attempt passed (a retry hid the failure: a `flaky` row, or a failure then a pass of the
  same stage and shard across re-runs); or when the run ended with the file failing on a
  commit where another run passed it (the failing run is the flaky one). An infrastructure
  failure (`infra`) that no retry of the run passed counts for neither: the test did not run.
- Order of runs: by the first start time of any of their attempts, then by run id.
- Refused: nothing: the rows are the store's, checked when they were recorded or imported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ci_policy.model.outcomes import Outcome
from ci_policy.read.declare import document, spec

RUN_URL = "{server}/{repository}/actions/runs/{run_id}"
FAILED = frozenset({"fail", "timeout", "killed", "flaky"})


@document
class RunRef:
    """One workflow run: its id, when it started, its page (null without a repository)."""

    run_id: str
    started_at: str
    url: str | None


@document
class FlakyFile:
    """A file that was flaky in at least one run of the window."""

    file: str
    runs: int = spec(minimum=1, description="The runs of the window the file ran in.")
    flaky_runs: int = spec(minimum=1, description="Of which it was flaky in.")
    flake_rate: float = spec(minimum=0, maximum=1, description="flaky_runs / runs, rounded to 4 places.")
    retried: int = spec(minimum=0, description="Flaky runs where a retry passed after a failure.")
    same_commit: int = spec(minimum=0, description="Flaky runs that failed on a commit another run passed.")
    first: RunRef = spec(description="The first flaky run.")
    last: RunRef = spec(description="The last flaky run.")


def run_url(run_id: str, repository: str | None, server: str = "https://github.com") -> str | None:
    if repository is None:
        return None
    return RUN_URL.format(server=server.rstrip("/"), repository=repository, run_id=run_id)


def flaky_runs(outcomes: Iterable[Outcome]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(file -> runs a retry passed after a failure, file -> runs that failed on a commit another run passed)."""
    per_run: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for o in sorted(outcomes, key=lambda o: (o.run_attempt, o.attempt, o.started_at)):
        per_run[(o.file, o.run_id)].append(o)
    retried: dict[str, set[str]] = defaultdict(set)
    passed_on: dict[tuple[str, str], set[str]] = defaultdict(set)   # (file, commit) -> runs that passed it
    failed_on: dict[tuple[str, str], set[str]] = defaultdict(set)   # (file, commit) -> runs that ended failing
    for (file, run_id), attempts in per_run.items():
        places: dict[tuple[str, int], list[Outcome]] = defaultdict(list)
        for o in attempts:
            places[(o.stage, o.shard)].append(o)
        hidden = any(o.status == "flaky" for o in attempts) or any(
            any(a.status in FAILED and any(b.status == "pass" for b in seq[i + 1:]) for i, a in enumerate(seq))
            for seq in places.values())
        if hidden:
            retried[file].add(run_id)
        commit = next((o.commit for o in attempts if o.commit), None)
        if commit is None:
            continue
        # How the run ended for the file: each place's last attempt.
        ends = [seq[-1].status for seq in places.values()]
        if any(status == "pass" for status in ends):
            passed_on[(file, commit)].add(run_id)
        if any(status in FAILED for status in ends):
            failed_on[(file, commit)].add(run_id)

    same_commit: dict[str, set[str]] = defaultdict(set)
    for (file, commit), failing in failed_on.items():
        passing = passed_on.get((file, commit), set())
        for run_id in failing:
            if passing - {run_id}:
                same_commit[file].add(run_id)

    return retried, same_commit


def flaky_files(outcomes: Iterable[Outcome], repository: str | None = None,
                server: str = "https://github.com") -> tuple[FlakyFile, ...]:
    rows = list(outcomes)
    started: dict[str, str] = {}
    for o in rows:
        if o.run_id not in started or o.started_at < started[o.run_id]:
            started[o.run_id] = o.started_at
    retried, same_commit = flaky_runs(rows)
    ran: dict[str, set[str]] = defaultdict(set)
    for o in rows:
        ran[o.file].add(o.run_id)

    def ref(run_id: str) -> RunRef:
        return RunRef(run_id=run_id, started_at=started[run_id], url=run_url(run_id, repository, server))

    def order(run_id: str) -> tuple[str, str]:
        return (started[run_id], run_id)

    found = []
    for file in sorted(set(retried) | set(same_commit)):
        flaky = retried[file] | same_commit[file]
        runs = len(ran[file])
        chronological = sorted(flaky, key=order)
        found.append(FlakyFile(file=file, runs=runs, flaky_runs=len(flaky), flake_rate=round(len(flaky) / runs, 4),
                               retried=len(retried[file]), same_commit=len(same_commit[file]),
                               first=ref(chronological[0]), last=ref(chronological[-1])))
    found.sort(key=lambda f: (-f.flake_rate, -f.flaky_runs, f.file))
    return tuple(found)
