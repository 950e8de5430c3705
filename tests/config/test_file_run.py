"""`file_run:` (`ci_policy.config.file_run`): where `/rerun-test` runs one file: image, tag and timeout."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config.fields import FrozenMap
from ci_policy.config.file_run import FILE_RUN_TABLE, FileRunConfig
from ci_policy.config.top import parse_config


def test_no_file_run_section_means_the_defaults():
    assert [FILE_RUN_TABLE.default(k) for k in ("image", "default_tag", "timeout_factor", "min_timeout",
                                                "prefer")] == [FrozenMap(), "latest", 3.0, 900.0, ()]
    file_run = parse_config(VALID).file_run
    assert file_run == FileRunConfig(image=FrozenMap(), default_tag="latest", timeout_factor=3.0,
                                     min_timeout=900.0, prefer=())
    assert file_run.image_for("cuda") is None


def test_every_file_run_key_set():
    text = VALID + ("file_run:\n"
                    "  image: {cuda: ghcr.io/org/ci-cuda, rocm: 'registry.local:5000/ci/rocm_6-2'}\n"
                    "  default_tag: v1.2_rc-3\n"
                    "  timeout_factor: 2.5\n"
                    "  min_timeout: 60\n"
                    "  prefer: [rocm, cuda]\n")
    file_run = parse_config(text).file_run
    assert file_run == FileRunConfig(
        image=FrozenMap({"cuda": "ghcr.io/org/ci-cuda", "rocm": "registry.local:5000/ci/rocm_6-2"}),
        default_tag="v1.2_rc-3", timeout_factor=2.5, min_timeout=60, prefer=("rocm", "cuda"))
    assert file_run.image_for("rocm") == "registry.local:5000/ci/rocm_6-2"
    assert file_run.image_for("cpu") is None


@pytest.mark.parametrize("section, needle, message, code, hint", [
    ("file_run: {image: {cuda: 'ghcr.io/org/ci-cuda:latest'}}\n", "'ghcr",
     "file_run.image.cuda: 'ghcr.io/org/ci-cuda:latest' is not an image repository (e.g. ghcr.io/org/ci-cuda, "
     "without a tag)", "CP105", None),
    ("file_run: {image: {cuda: Ghcr.io/Org}}\n", "Ghcr",
     "file_run.image.cuda: 'Ghcr.io/Org' is not an image repository (e.g. ghcr.io/org/ci-cuda, without a tag)",
     "CP105", None),
    ("file_run: {image: {tpu: x}}\n", "tpu",
     "file_run.image.tpu: unknown key; did you mean 'cpu'?", "CP102", "allowed keys here: cpu, cuda, rocm"),
    ("file_run: {default_tag: '-bad'}\n", "'-bad'",
     "file_run.default_tag: '-bad' is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", "CP105", None),
    ("file_run: {timeout_factor: 0}\n", "0}",
     "file_run.timeout_factor: must be greater than 0, got 0", "CP105", None),
    ("file_run: {min_timeout: -1}\n", "-1",
     "file_run.min_timeout: must be greater than 0, got -1", "CP105", None),
    ("file_run: {prefer: cuda}\n", "cuda}",
     "file_run.prefer: expected a list of backends, got a string ('cuda')", "CP104",
     "write the backends in the order to choose them, each once, e.g. prefer: [cuda, rocm]"),
    ("file_run: {prefer: [cuda, rocm, cuda]}\n", "cuda]",
     "file_run.prefer[2]: 'cuda' is listed twice (first as file_run.prefer[0])", "CP106",
     "list each backend once, in the order to choose them"),
    ("file_run: {prefer: [cdua]}\n", "cdua",
     "file_run.prefer[0]: expected one of cpu, cuda, rocm, got 'cdua'", "CP105",
     "did you mean 'cuda'? Otherwise, declare it in the configuration: backends: {cdua: {accelerator: true}}"),
    ("file_run: {prefer: [[cuda]]}\n", "[cuda]]",
     "file_run.prefer[0]: expected a backend name, got a list", "CP104",
     "write the backends in the order to choose them, each once, e.g. prefer: [cuda, rocm]"),
])
def test_invalid_file_run(section, needle, message, code, hint):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, code, hint)]
