"""`ci-policy completion SHELL`: a completion script made from the parser, checked by the shell.

The bash script is parsed by `bash -n`, then sourced and asked what it completes, as bash asks
it (`COMP_WORDS`, `COMP_CWORD`, the function `complete -F` names). The fish script names every
subcommand. `shtab` is imported by this command alone.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from helpers import clean_env, run_cli

from ci_policy.cli.main import SUBCOMMANDS

NAMES = [name for name, _module, _summary in SUBCOMMANDS]


def script(shell: str, capsys, *extra: str) -> str:
    rc, out, err = run_cli(["completion", shell, *extra], capsys)
    assert (rc, err) == (0, "")
    return out


def completes(bash_script: str, *words: str) -> list[str]:
    """What bash offers after `words` (the last one being completed) with the script sourced."""
    function = re.search(r"^complete .*-F (\S+) ci-policy$", bash_script, re.MULTILINE)
    assert function, bash_script[-500:]
    line = " ".join(words)
    program = (f"source /dev/stdin; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
               f"COMP_CWORD={len(words) - 1}; COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; "
               f"{function.group(1)}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    proc = subprocess.run(["bash", "-c", program], input=bash_script, capture_output=True, text=True, check=True,
                          env=clean_env(), timeout=60)
    return [w for w in proc.stdout.splitlines() if w]


def test_the_bash_script_parses(tmp_path, capsys) -> None:
    path = tmp_path / "ci-policy.bash"
    path.write_text(script("bash", capsys))
    proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_bash_completes_the_subcommands_and_a_subcommands_options(capsys) -> None:
    bash = script("bash", capsys)
    assert completes(bash, "ci-policy", "") == NAMES
    assert completes(bash, "ci-policy", "re") == ["registry", "result", "report", "report-status"]
    assert completes(bash, "ci-policy", "plan", "--ev") == ["--event"]
    assert completes(bash, "ci-policy", "run", "--max") == ["--max-attempts"]
    assert completes(bash, "ci-policy", "completion", "") == ["bash", "zsh", "fish"]
    assert completes(bash, "ci-policy", "lint", "--format", "") == ["text", "json", "github"]


def test_bash_completes_file_names_for_an_option_that_takes_a_file(tmp_path, capsys, monkeypatch) -> None:
    bash = script("bash", capsys)
    (tmp_path / "plan.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert completes(bash, "ci-policy", "list", "--plan", "pl") == ["plan.json"]


def test_the_fish_script_names_every_subcommand(capsys) -> None:
    fish = script("fish", capsys)
    for name in NAMES:
        assert re.search(rf"\b{re.escape(name)}\b", fish), name
    assert "complete -c ci-policy" in fish and " -l max-attempts " in fish and " -l explain " in fish


def test_the_zsh_script_is_a_compdef_of_every_subcommand(capsys) -> None:
    zsh = script("zsh", capsys)
    assert zsh.startswith("#compdef ci-policy")
    assert all(f"\n    {name}:'" in zsh for name in NAMES)


def test_prog_names_the_command_completed(capsys) -> None:
    assert "complete -o bashdefault -F _shtab_cip cip" in script("bash", capsys, "--prog", "cip")


def test_an_unknown_shell_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(["completion", "tcsh"], capsys)
    out, err = capsys.readouterr()
    assert (info.value.code, out) == (2, "")
    assert "ci-policy completion: error: argument SHELL: invalid choice: 'tcsh'" in err


@pytest.mark.parametrize("argv", [["--help"], ["lint", "--help"], ["schema", "config"]])
def test_no_other_command_imports_shtab(argv, tmp_path) -> None:
    probe = ("import json, sys\nfrom ci_policy.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\nsys.stderr.write(json.dumps('shtab' in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True, timeout=60)
    assert json.loads(proc.stderr) is False


def test_a_subcommand_whose_extra_is_missing_completes_by_its_name(tmp_path, capsys) -> None:
    # PyGithub and libcst made unimportable: comment, pull-request, report-status and tune are
    # named, their modules (which import them) never imported.
    probe = ("import sys\nsys.modules['github'] = None\nsys.modules['libcst'] = None\n"
             "from ci_policy.cli.main import main\nrc = main(['completion', 'bash'])\n"
             "sys.stderr.write(repr((rc, 'ci_policy.cli.comment' in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True, timeout=60)
    assert proc.stderr == "(0, False)"
    assert completes(proc.stdout, "ci-policy", "") == NAMES
    assert completes(proc.stdout, "ci-policy", "comment", "--") == ["--help"]
    assert "--dry-run" in completes(script("bash", capsys), "ci-policy", "comment", "--")
