"""`images:` the CI image each accelerator backend's stage jobs run in, and how it is built.

- In: the optional `images` mapping, backend (built in or declared under `backends`) ->
  `{repository, dockerfile, context}`.
- Out: a read-only mapping backend -> frozen `ImageBuild`.
- The plan builds `repository:<head sha>` from `dockerfile` in `context` when a stage of
  the backend runs (`images_to_build`), and runs the backend's stages in it; otherwise they
  run in `repository:<file_run.default_tag>`. A backend without an entry runs without a
  container.
- Refused: a repository that is not one (or carries a tag; checked as `file_run.image`
  is), a dockerfile or context that is not a repo-relative POSIX path inside the checkout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config.backends import BACKEND_NAME, backends_of
from ci_policy.config.fields import REQUIRED, TABLE, Context, FrozenMap, Key, Parser, Table, relative_path, string
from ci_policy.config.file_run import IMAGE_REPO_SCHEMA, check_repo
from ci_policy.read.yamlnodes import INVALID, Schema

IMAGE = Table("images.<backend>", "How the CI image of one backend is built and named.", (
    Key("repository", string("image repository (no tag)", check_repo, item=IMAGE_REPO_SCHEMA), REQUIRED,
        "Where the image is pushed, e.g. `ghcr.io/org/ci-cuda`; the plan adds the tag."),
    Key("dockerfile", relative_path(), REQUIRED, "The Dockerfile, repo-relative."),
    Key("context", relative_path(), ".", "The build context, repo-relative."),
))


@dataclass(frozen=True)
class ImageBuild:
    """`images.<backend>`: the image repository and what builds it."""

    repository: str
    dockerfile: str
    context: str = IMAGE.default("context")


def _parse_images(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    backends = backends_of(ctx)
    if backends is INVALID:  # reported where it was declared
        return INVALID
    table = s.mapping(node, where, optional=backends.names)
    if table is None:
        return INVALID
    images: dict[str, ImageBuild] = {}
    for backend, (_key, value_node) in table.items():
        values = IMAGE.read(s, value_node, f"{where}.{backend}")
        if values is None or values.any_invalid() or not all(k.name in values for k in IMAGE.keys if k.required):
            continue
        images[backend] = ImageBuild(repository=values.get("repository"), dockerfile=values.get("dockerfile"),
                                     context=values.get("context"))
    return FrozenMap(images)


IMAGES = Parser("mapping of backend (cpu | cuda | rocm | a declared one) to an image (below)", _parse_images, IMAGE,
                schema={"type": "object", "propertyNames": {"pattern": f"^(?:{BACKEND_NAME})$"},
                        "additionalProperties": TABLE})
