"""The bundled example and a broken checkout, shared by the tests of `lint`, `registry` and `main`
(imported as `cli.expected`).

- Their exact outputs are golden files: tests/data/golden/cli/lint/ and tests/data/golden/cli/registry/
  (`example.*` on the example, `broken.*` on the broken checkout).
"""

from __future__ import annotations

from pathlib import Path

from helpers import MINIMAL_CONFIG, MINIMAL_LABELS, read_golden

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu-repo"


def lint_github_under(prefix: str) -> str:
    """`lint --format github` on the example when the workspace holds it under PREFIX (e.g. "gpu-repo/")."""
    return read_golden("cli/lint/example-github.txt").replace("::warning file=", f"::warning file={prefix}")


# -- a checkout with errors ---------------------------------------------------------------

CONFIG = MINIMAL_CONFIG
LABELS = MINIMAL_LABELS
MAIN = '\nif __name__ == "__main__":\n    main()\n'
IMPORT = "from ci_policy import register_cuda_ci\n\n"


def write_repo(root: Path, files: dict[str, str], config: str = CONFIG, labels: str = LABELS) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(config)
    (root / "labels.py").write_text(labels)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
