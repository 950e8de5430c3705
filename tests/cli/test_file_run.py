"""`ci-policy file-run`: where `/rerun-test` runs one test file of a checkout.

The resolver itself is tested in tests/plan/test_filerun.py; here: the options, the
formats, the exit codes and what the command imports.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from filerun_cases import BAD_TAG, gpu_test, write
from schema_check import assert_valid

from ci_policy.cli import main

EXAMPLE_REPO = Path(__file__).resolve().parents[2] / "examples" / "gpu-repo"
BAD_PATH = ("is not a repo-relative test file path DIR/.../NAME.py (segments of letters, digits, '_', '.', '-', "
            "each starting with a letter, digit or '_'; at most 255 characters)")
SFT = "tests/e2e/test_megatron_sft.py"
SFT_PLAN = {"file": SFT, "hw": "cuda", "suite": "stage-b-1-gpu-h200", "runs_on": ["h200", "1gpu"],
            "container_image": "ghcr.io/minirl/ci-cuda:latest", "container_options": "--gpus all",
            "timeout_seconds": 900}


def cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["file-run", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def usage_error(capsys, *args: str) -> str:
    """argparse refuses the command line: exit 2, nothing on stdout, the message on stderr."""
    with pytest.raises(SystemExit) as info:
        main(["file-run", *args])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


# -- formats -------------------------------------------------------------------------------------------------

def test_json_is_the_default_format(pr, capsys):
    rc, out, err = cli(capsys, "--file", SFT, "--repo", str(pr))
    assert (rc, err) == (0, "")
    assert json.loads(out) == SFT_PLAN
    assert out == json.dumps(SFT_PLAN, indent=2) + "\n"
    assert cli(capsys, "--file", SFT, "--repo", str(pr), "--format", "json") == (0, out, "")


def test_text_format(pr, capsys):
    assert cli(capsys, "--file", SFT, "--repo", str(pr), "--format", "text") == (0, (
        f"file: {SFT}\n"
        "stage: stage-b-1-gpu-h200 (cuda)\n"
        "runs on: h200, 1gpu\n"
        "image: ghcr.io/minirl/ci-cuda:latest\n"
        "container options: --gpus all\n"
        "timeout: 15m0s\n"), "")
    rc, out, _err = cli(capsys, "--file", "tests/fast/test_kl.py", "--repo", str(pr), "--format", "text")
    assert (rc, out.splitlines()[2:4]) == (0, ["runs on: ubuntu-latest", "image: -"])


def test_the_checkout_defaults_to_the_current_directory(pr, monkeypatch, capsys):
    monkeypatch.chdir(pr)
    rc, out, err = cli(capsys, "--file", SFT)
    assert (rc, err) == (0, "")
    assert json.loads(out) == SFT_PLAN


# -- usage errors: exit 2, before the checkout is read ------------------------------------------------------

@pytest.mark.parametrize("path", ["tests/../labels.py", "/etc/test_passwd.py", "src/.hidden/test_a.py", ""])
def test_a_file_that_is_not_a_test_path_is_a_usage_error(tmp_path, capsys, path):
    err = usage_error(capsys, "--file", path, "--repo", str(tmp_path / "missing"))
    assert err.endswith(f"ci-policy file-run: error: argument --file: {path!r} {BAD_PATH}\n")


@pytest.mark.parametrize("tag", ["-x", ".x", "a b", "a:b", "a/b", "a@sha256", "$(id)", "x;id", "t\n", "é",
                                 "a" * 129])
def test_an_invalid_tag_is_a_usage_error(pr, tag, capsys):
    err = usage_error(capsys, "--file", SFT, "--repo", str(pr), f"--image-tag={tag}")
    assert err.endswith(f"ci-policy file-run: error: argument --image-tag: {tag!r} {BAD_TAG}\n")


def test_an_empty_tag_means_the_configured_default(pr, capsys):
    rc, out, _err = cli(capsys, "--file", SFT, "--repo", str(pr), "--image-tag", "")
    assert (rc, json.loads(out)) == (0, SFT_PLAN)


def test_a_missing_checkout_is_a_usage_error(tmp_path, capsys):
    rc, out, err = cli(capsys, "--file", SFT, "--repo", str(tmp_path / "missing"))
    assert (rc, out) == (2, "")
    assert err == (f"ci-policy file-run: error: --repo: checkout {tmp_path / 'missing'} is not a directory\n"
                   "    hint: pass --repo with the root of the checkout\n")


def test_source_root_is_gone(pr, capsys):
    assert "unrecognized arguments: --source-root" in usage_error(capsys, "--file", SFT, "--source-root", str(pr))


def outputs(path: Path) -> dict[str, str]:
    text = path.read_text()
    found = re.findall(r"^([a-z_]+)<<(ghadelimiter_[0-9a-f-]{36})\n(.*?)\n\2\n", text, flags=re.M | re.S)
    assert "".join(f"{n}<<{d}\n{v}\n{d}\n" for n, d, v in found) == text
    return {name: value for name, _delimiter, value in found}


@pytest.mark.parametrize("file, tag, expected", [
    ("tests/e2e/test_megatron_sft.py", "latest",
     {"hw": "cuda", "suite": "stage-b-1-gpu-h200", "runs_on": '["h200", "1gpu"]',
      "container_image": "ghcr.io/minirl/ci-cuda:latest", "container_options": "--gpus all",
      "timeout_seconds": "900", "timeout_minutes": "20"}),
    ("tests/e2e/test_rocm_megatron_sft.py", "rocm-7",
     {"hw": "rocm", "suite": "stage-c-4-gpu-mi350", "runs_on": '["mi350", "4gpu"]',
      "container_image": "ghcr.io/minirl/ci-rocm:rocm-7",
      "container_options": "--device /dev/kfd --device /dev/dri --group-add video --group-add render",
      "timeout_seconds": "1620", "timeout_minutes": "32"}),
    ("tests/fast/test_kl.py", "latest",
     {"hw": "cpu", "suite": "stage-a-cpu", "runs_on": '["ubuntu-latest"]', "container_image": "",
      "container_options": "", "timeout_seconds": "900", "timeout_minutes": "20"}),
])
def test_format_github_writes_the_step_outputs(pr, tmp_path, monkeypatch, capsys, file, tag, expected):
    out_file = tmp_path / "github_output"
    out_file.write_text("")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    rc, out, err = cli(capsys, "--file", file, "--repo", str(pr), "--config",
                       str(pr / ".github/ci-policy.yml"), "--image-tag", tag, "--format", "github")
    assert (rc, err) == (0, "")
    assert outputs(out_file) == expected
    assert json.loads(out)["timeout_seconds"] == int(expected["timeout_seconds"])


def test_format_github_rounds_the_job_timeout_up_to_whole_minutes_plus_five(pr, tmp_path, monkeypatch, capsys):
    write(pr, "tests/e2e/test_odd.py", gpu_test('register_cuda_ci(est_time=301, suite="stage-b-1-gpu-h200", '
                                                'labels=["fsdp"])'))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    rc, _out, _err = cli(capsys, "--file", "tests/e2e/test_odd.py", "--repo", str(pr), "--format", "github")
    assert rc == 0
    assert (outputs(tmp_path / "out")["timeout_seconds"], outputs(tmp_path / "out")["timeout_minutes"]) == ("903", "21")


def test_format_github_needs_github_output(pr, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    rc, out, err = cli(capsys, "--file", "tests/e2e/test_megatron_sft.py", "--repo", str(pr),
                       "--format", "github")
    assert rc == 2
    assert out == ("::error::ci-policy file-run: $GITHUB_OUTPUT: is not set; --format github runs inside a "
                   "GitHub Actions step (hint: use --format text or json outside GitHub Actions)\n")
    assert err == ("ci-policy file-run: error: $GITHUB_OUTPUT: is not set; --format github runs inside a "
                   "GitHub Actions step\n    hint: use --format text or json outside GitHub Actions\n")


def test_format_github_reports_a_refusal_as_an_annotation(pr, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    rc, out, err = cli(capsys, "--file", "tests/e2e/test_fsdp_checkpoint_resume.py", "--repo", str(pr),
                       "--format", "github")
    assert (rc, err) == (1, "ci-policy: 1 error\n")
    assert out == ("::error file=tests/e2e/test_fsdp_checkpoint_resume.py,line=10::tests/e2e/"
                   "test_fsdp_checkpoint_resume.py is disabled: flaky on H200 driver 580, tracked in #1234 "
                   "(hint: re-enable the registration to rerun it)\n")
    assert not (tmp_path / "out").exists()


def test_a_refusal_is_printed_located_with_its_hint(pr, capsys):
    rc, out, err = cli(capsys, "--file", "tests/e2e/test_gb200_scaling.py", "--repo", str(pr))
    assert (rc, out) == (1, "")
    assert err == ("tests/e2e/test_gb200_scaling.py:9: tests/e2e/test_gb200_scaling.py is registered to "
                   "stage-d-8-gpu-gb200, an external stage that ci-policy does not run\nci-policy: 1 error\n")


CHECK_MODULES = textwrap.dedent("""\
    import importlib, json, os, sys
    for name in filter(None, os.environ.get("PRELOAD", "").split(",")):
        importlib.import_module(name)
    from ci_policy.cli import main
    rc = main(sys.argv[1:])
    adapters = ("github", "libcst", "psycopg", "psycopg2", "sqlite3", "requests", "urllib3")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in adapters)
    sys.stdout.flush()
    print(json.dumps({"rc": rc, "loaded": loaded}), file=sys.stderr)
""")


def run_checked(pr: Path, cwd: Path, preload: str = "") -> tuple[dict, dict]:
    env = {**os.environ, "PRELOAD": preload}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-c", CHECK_MODULES, "file-run", "--file", "tests/e2e/test_megatron_sft.py",
                           "--repo", str(pr)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return json.loads(proc.stdout), json.loads(proc.stderr.strip().splitlines()[-1])


def test_file_run_imports_no_adapter_no_github_client_and_no_database_driver(pr, tmp_path):
    plan, status = run_checked(pr, tmp_path)
    assert plan["suite"] == "stage-b-1-gpu-h200"
    assert status == {"rc": 0, "loaded": []}


def test_the_module_check_sees_an_adapter_that_was_imported(pr, tmp_path):
    # The same check, with the adapters imported first: it reports them (it is not vacuous).
    _plan, status = run_checked(pr, tmp_path, preload="github,libcst,psycopg")
    assert status["rc"] == 0
    assert {"github", "libcst", "psycopg", "requests"} <= set(status["loaded"])


# -- which registration: --backend / --stage (issue 14, finding 10) -------------------------------------------

ROCM_FSDP = "tests/e2e/test_rocm_fsdp_grpo.py"


@pytest.mark.parametrize("choice, suite", [
    (["--backend", "rocm"], "stage-c-4-gpu-mi350"),
    (["--stage", "stage-c-4-gpu-h200"], "stage-c-4-gpu-h200"),
    (["--stage", "", "--backend", "cuda"], "stage-c-4-gpu-h200"),  # a blank workflow input is not given
])
def test_a_backend_or_stage_picks_the_registration(pr, capsys, choice, suite):
    rc, out, err = cli(capsys, "--file", ROCM_FSDP, "--repo", str(pr), *choice)
    assert (rc, err, json.loads(out)["suite"]) == (0, "", suite)


def test_without_a_choice_several_registrations_are_refused_listing_them(pr, capsys):
    assert cli(capsys, "--file", ROCM_FSDP, "--repo", str(pr)) == (
        1, "", f"{ROCM_FSDP}:10: {ROCM_FSDP} has 2 registrations that can run (cuda stage-c-4-gpu-h200 (line 9), "
        "rocm stage-c-4-gpu-mi350 (line 10)); name the backend or stage to rerun\n"
        f"    hint: /rerun-test {ROCM_FSDP} STAGE, with STAGE one of: stage-c-4-gpu-h200, stage-c-4-gpu-mi350 "
        "(or the backend: cuda, rocm); or choose by backend for every file: file_run.prefer: [cuda, rocm]\n"
        "ci-policy: 1 error\n")


def test_prefer_gives_upstreams_choice_and_the_output_says_why(pr, capsys):
    # radixark/miles reruns the CUDA registration of a file registered for CUDA and ROCm.
    config = pr / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + "  prefer: [cuda, rocm]\n")
    assert cli(capsys, "--file", ROCM_FSDP, "--repo", str(pr), "--format", "text") == (0, (
        f"file: {ROCM_FSDP}\n"
        "stage: stage-c-4-gpu-h200 (cuda)\n"
        "runs on: h200, 4gpu\n"
        "image: ghcr.io/minirl/ci-cuda:latest\n"
        "container options: --gpus all\n"
        "timeout: 18m0s\n"
        "chosen by: file_run.prefer [cuda, rocm], among cuda stage-c-4-gpu-h200 (line 9), "
        "rocm stage-c-4-gpu-mi350 (line 10)\n"), "")
    rc, out, err = cli(capsys, "--file", ROCM_FSDP, "--repo", str(pr))
    assert (rc, err) == (0, "")
    assert out == json.dumps({
        "file": ROCM_FSDP, "hw": "cuda", "suite": "stage-c-4-gpu-h200", "runs_on": ["h200", "4gpu"],
        "container_image": "ghcr.io/minirl/ci-cuda:latest", "container_options": "--gpus all",
        "timeout_seconds": 1080,
        "choice": {"by": "file_run.prefer", "prefer": ["cuda", "rocm"],
                   "among": ["cuda stage-c-4-gpu-h200 (line 9)", "rocm stage-c-4-gpu-mi350 (line 10)"]}},
        indent=2) + "\n"
    assert_valid("file-run", json.loads(out))


def test_a_missing_file_says_it_does_not_exist_and_suggests_the_close_one(pr, capsys):
    missing = "tests/e2e/test_megatron_sf.py"
    assert cli(capsys, "--file", missing, "--repo", str(pr), "--format", "text") == (
        1, "", f"{missing}: CP402 path-missing: test file {missing} does not exist\n"
        f"    hint: did you mean {SFT}? Paths are relative to the checkout's root (--repo DIR).\n"
        "ci-policy: 1 error\n")


def test_an_npu_file_registered_twice_is_told_apart_by_its_stage(pr, capsys):
    # Finding: "(or the backend: npu, npu)", and --backend npu failed the same way.
    config = pr / ".github" / "ci-policy.yml"
    npu_config = ("backends: {npu: {}}\n"
                  "markers: {names: {register_cpu_ci: cpu, register_cuda_ci: cuda, register_rocm_ci: rocm, "
                  "register_npu_ci: npu}}\n"
                  "stages:\n"
                  "  - {name: npu-a2, backend: npu, runs_on: [a2]}\n"
                  "  - {name: npu-a3, backend: npu, runs_on: [a3]}\n")
    config.write_text(config.read_text().replace("stages:\n", npu_config, 1))
    npu = "tests/e2e/test_npu.py"
    write(pr, npu, gpu_test('register_npu_ci(60, "npu-a2", labels=["fsdp"])\n'
                            'register_npu_ci(60, "npu-a3", labels=["fsdp"])'))
    head = (f"{npu}:4: {npu} has 2 registrations that can run (npu npu-a2 (line 3), npu npu-a3 (line 4)); "
            "name the {} to rerun\n"
            f"    hint: /rerun-test {npu} STAGE, with STAGE one of: npu-a2, npu-a3\nci-policy: 1 error\n")
    assert cli(capsys, "--file", npu, "--repo", str(pr)) == (1, "", head.format("backend or stage"))
    assert cli(capsys, "--file", npu, "--repo", str(pr), "--backend", "npu") == (1, "", head.format("stage"))
    rc, out, err = cli(capsys, "--file", npu, "--repo", str(pr), "--backend", "npu", "--stage", "npu-a3")
    assert (rc, err, json.loads(out)["suite"], json.loads(out)["runs_on"]) == (0, "", "npu-a3", ["a3"])


def test_a_stage_that_is_not_a_name_is_a_usage_error(capsys):
    assert "argument --stage: '$(id)' is not a backend or stage name" in usage_error(
        capsys, "--file", ROCM_FSDP, "--stage", "$(id)")


# -- the scan cache: --cache DIR / --no-cache, as the scanning commands take them ---------------------------------

def test_cache_dir_keeps_the_scan_and_the_next_run_reads_it_back(pr, tmp_path, monkeypatch, capsys):
    import ast

    cache = tmp_path / "cache"
    expected = json.dumps(SFT_PLAN, indent=2) + "\n"
    assert cli(capsys, "--file", SFT, "--repo", str(pr), "--cache", str(cache)) == (0, expected, "")
    assert [p.name.endswith(".pack.json") for p in cache.iterdir()] == [True]
    parses: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, filename="<unknown>", *a, **k: (
        parses.append(filename), real(source, filename, *a, **k))[1])
    assert cli(capsys, "--file", SFT, "--repo", str(pr), "--cache", str(cache))[:2] == (0, expected)
    assert SFT not in parses  # a hit: the file is not parsed again


def test_without_cache_dir_nothing_is_kept(pr, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for flags in ([], ["--no-cache"]):
        assert cli(capsys, "--file", SFT, "--repo", str(pr), *flags) == (0, json.dumps(SFT_PLAN, indent=2) + "\n", "")
    assert not (tmp_path / "xdg").exists()


def test_a_cache_inside_the_checkout_is_refused_and_cache_excludes_no_cache(pr, tmp_path, capsys):
    rc, out, err = cli(capsys, "--file", SFT, "--repo", str(pr), "--cache", str(pr / "c"))
    assert (rc, out) == (2, "")
    assert err == (f"ci-policy file-run: error: --cache: {pr / 'c'} is inside the checkout {pr}\n"
                   "    hint: name a directory outside the checkout, or pass --no-cache\n")
    err = usage_error(capsys, "--file", SFT, "--repo", str(pr), "--cache", str(tmp_path / "c"), "--no-cache")
    assert err.splitlines()[-1] == "ci-policy file-run: error: argument --no-cache: not allowed with argument --cache"


def test_the_file_is_parsed_once_with_a_suppression_comment(pr, monkeypatch, capsys):
    import ast

    with open(pr / SFT, "a") as fh:
        fh.write("x = (1,\n     2)  # ci-policy: ignore[CP201]\n")
    parses: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, filename="<unknown>", *a, **k: (
        parses.append(filename), real(source, filename, *a, **k))[1])
    assert cli(capsys, "--file", SFT, "--repo", str(pr))[:2] == (0, json.dumps(SFT_PLAN, indent=2) + "\n")
    assert parses.count(SFT) == 1
