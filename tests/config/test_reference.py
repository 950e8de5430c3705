"""The docs site's configuration reference is generated from the field tables and kept in sync."""

from __future__ import annotations

from pathlib import Path

from ci_policy.config.reference import EXAMPLE, HEADING, _tables, main, markdown, replace_section
from ci_policy.config.top import TOP, parse_config

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "configuration.md"
REGENERATE = "python -m ci_policy.cli.docs --update docs"


def test_the_site_page_is_the_generated_reference():
    """The page holds the reference whole, its mappings' headings one level up (the page's title is
    the only `#` heading); tests/test_docs_site.py compares the whole page."""
    text = PAGE.read_text(encoding="utf-8")
    body = markdown().replace("\n### ", "\n## ")
    assert f"\n\n{body}\n" in text, (
        f"docs/reference/configuration.md differs from the key tables; regenerate it with: {REGENERATE}")



def test_every_key_appears_in_the_reference_with_its_default():
    text = markdown()
    for table in _tables(TOP):
        assert f"\n### `{table.title}`\n" in text or table is TOP
        for key in table.keys:
            assert f"\n| `{key.name}` | " in text
    assert "| `window` | integer in [1, 10000] | `10` | Number of recent baselines a value is compared with. |" in text
    assert ("| `backend` | cpu \\| cuda \\| rocm \\| a declared backend | required | "
            "Hardware the stage's tests need (see `backends`). |") in text


def test_the_example_is_a_valid_configuration():
    config = parse_config(EXAMPLE)
    assert [(s.name, s.backend) for s in config.stages] == [
        ("stage-a-cpu", "cpu"), ("stage-c-4-gpu-h200", "cuda"), ("base-b-test-1-npu-a3", "npu")]
    assert config.backends.accelerators == ("cuda", "rocm", "npu")
    assert dict(config.markers.names) == {"register_cpu_ci": "cpu", "register_cuda_ci": "cuda",
                                          "register_rocm_ci": "rocm", "register_amd_ci": "rocm",
                                          "register_npu_ci": "npu"}
    assert config.markers.suite_fields == ("stage", "runner_config")
    assert config.cadences.for_cron("0 15 * * 6") == "weekly"


def test_replace_section_rewrites_only_that_section():
    readme = f"# T\n\nintro\n\n{HEADING}\n\nold text\n\n## Next\n\nkept\n"
    updated = replace_section(readme)
    assert updated == f"# T\n\nintro\n\n{HEADING}\n\n{markdown()}\n## Next\n\nkept\n"
    assert replace_section(updated) == updated
    last = f"# T\n\n{HEADING}\n\nold\n"
    assert replace_section(last) == f"# T\n\n{HEADING}\n\n{markdown()}\n"


def test_main_prints_or_updates(tmp_path, capsys):
    assert main([]) == 0
    assert capsys.readouterr().out == markdown()
    readme = tmp_path / "README.md"
    readme.write_text(f"{HEADING}\n\nstale\n\n## Next\n", encoding="utf-8")
    assert main(["--update", str(readme)]) == 0
    assert readme.read_text(encoding="utf-8") == f"{HEADING}\n\n{markdown()}\n## Next\n"


def test_update_of_a_file_without_the_section_is_a_clear_error(tmp_path, capsys):
    hint = "    hint: the docs site's configuration page is written by python -m ci_policy.cli.docs --update docs\n"
    page = tmp_path / "page.md"
    page.write_text("# T\n\n## Next\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["--update", str(page)]) == 2
    assert capsys.readouterr().err == (
        f"python -m ci_policy.config.reference: error: {page}: no section {HEADING!r}\n{hint}")
    assert page.read_text(encoding="utf-8") == "# T\n\n## Next\n"
    assert main(["--update", str(tmp_path / "reference.md")]) == 2
    assert capsys.readouterr().err == (
        f"python -m ci_policy.config.reference: error: {tmp_path / 'reference.md'}: No such file or directory\n{hint}")
