"""`ci-policy file-run`: where `/rerun-test` runs one test file of a checkout.

- In: --repo (the checkout, read as data), --file, --backend/--stage (which registration,
  when the file has several), --config, --image-tag, --format json|text|github, and
  --cache DIR / --no-cache as the scanning commands take them, except that without
  --cache no cache is used: the command reads one test file, which parses faster than
  the cache's pack of a large checkout loads.
- Out: the file's stage, runner labels, container image and timeout; in github format
  also $GITHUB_OUTPUT values for the job that runs it.
- Refused: a --file that is not a test path or an --image-tag that is not a tag (exit 2,
  before the checkout is read); a file no stage may run (exit 1, located, with a hint).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ci_policy.app.file_run import FileRunRequest, file_run, image_tag, test_path
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_cache, add_config, add_format, add_repo, scan_request
from ci_policy.cli.output import append_github_file, github_file, output_delimiter
from ci_policy.errors import InputError
from ci_policy.render.github import file_run_outputs
from ci_policy.render.jsondoc import file_run_json
from ci_policy.render.text import file_run_text

NAME = "file-run"
EXAMPLES = examples(
    ("where /rerun-test runs one test file: its stage, runners, container image and"
     " timeout",
     "ci-policy file-run --repo examples/gpu-repo --file tests/e2e/test_megatron_sft.py"
     " --format text"),
    ("the same as JSON, as the rerun-test workflow reads it",
     "ci-policy file-run --repo examples/gpu-repo --file tests/e2e/test_megatron_sft.py"))
# A backend, a stage name or a stage key (`NAME@BACKEND`, `KEY+VARIANT`: `config.stages`).
NAME_RE = re.compile(r"(?=.{1,100}$)[A-Za-z0-9][A-Za-z0-9_.-]*(?:@[a-z][a-z0-9_]*)?(?:\+[A-Za-z0-9][A-Za-z0-9_.-]*)?")


def _test_path(text: str) -> str:
    try:
        return test_path(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _image_tag(text: str) -> str | None:
    if not text:  # a workflow input left blank: the configured default_tag
        return None
    try:
        return image_tag(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _name(text: str) -> str | None:
    if not text:  # a workflow input left blank
        return None
    if not NAME_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a backend or stage name "
                                         "([A-Za-z0-9][A-Za-z0-9_.-]*, or a stage's NAME@BACKEND or KEY+VARIANT, "
                                         "at most 100 characters)")
    return text


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Resolve the stage, runners, container image and timeout that "
                                   "`/rerun-test FILE` uses for one test file of a checkout.",
                       epilog=EXAMPLES)
    add_repo(p)
    add_config(p, help="the trusted configuration file (default: DIR/.github/ci-policy.yml)")
    p.add_argument("--file", required=True, type=_test_path, metavar="PATH",
                   help="the test file, repo-relative: DIR/.../FILE.py, a discovered test file")
    p.add_argument("--backend", default=None, type=_name, metavar="B",
                   help="rerun the file's registration of this backend (empty: not given)")
    p.add_argument("--stage", default=None, type=_name, metavar="S",
                   help="rerun the file's registration of this stage (empty: not given); needed when "
                        "several stages that ci-policy runs register the file")
    p.add_argument("--image-tag", default=None, type=_image_tag, metavar="TAG",
                   help="container image tag (default, or when empty: the configured file_run.default_tag)")
    add_cache(p, jobs=False, default=False)
    add_format(p, ("json", "text", "github"), default="json")
    return p


def run(args: argparse.Namespace) -> int:
    plan = file_run(FileRunRequest(Path(args.repo), args.config, args.file, scan_request(args, default=False),
                                   image_tag=args.image_tag, backend=args.backend, stage=args.stage))
    if args.format == "github":
        append_github_file("GITHUB_OUTPUT", github_file("GITHUB_OUTPUT"),
                           file_run_outputs(plan, output_delimiter()))
    if args.format == "text":
        print(file_run_text(plan))
    else:
        print(file_run_json(plan))
    return 0
