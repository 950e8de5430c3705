"""`images:` the CI image each accelerator backend's stage jobs run in, and how it is built;
`image_build:` where the images are built and pushed.

- In: the optional `images` mapping, backend (built in or declared under `backends`) ->
  `{repository, dockerfile, context}`; the optional `image_build` mapping `{runs_on, registry}`.
- Out: a read-only mapping backend -> frozen `ImageBuild`; a frozen `ImageBuilder` (the
  builder job's runner labels, default `[self-hosted, image-builder]`, and the registry,
  default `ghcr.io`). The pipeline logs in to ghcr.io with the job's GITHUB_TOKEN and to any
  other registry with the `registry-username`/`registry-password` secrets its caller passes.
- The plan builds `repository:<head sha>` from `dockerfile` in `context` when a stage of
  the backend runs (`images_to_build`), and runs the backend's stages in it; otherwise they
  run in `repository:<file_run.default_tag>`. A backend without an entry runs without a
  container.
- Refused: a repository that is not one (or carries a tag; checked as `file_run.image`
  is) or is not in `image_build.registry` (CP108), a dockerfile or context that is not a
  repo-relative POSIX path inside the checkout; a registry that is not a host (Docker reads a
  first component without `.` or `:`, other than `localhost`, as a Docker Hub namespace); a
  runner label that is not one (`[A-Za-z0-9][A-Za-z0-9_.-]*`: no space, comma or expression).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes
from ci_policy.config.backends import BACKEND_NAME, backends_of
from ci_policy.config.fields import (
    REQUIRED,
    TABLE,
    Context,
    FrozenMap,
    Key,
    Parser,
    Table,
    Values,
    mapping_of,
    relative_path,
    string,
    strings,
)
from ci_policy.config.file_run import IMAGE_REPO_SCHEMA, check_repo
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.yamlnodes import INVALID, Schema

GHCR = "ghcr.io"
_HOST_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
# A registry host: dotted, or localhost, with an optional port; or any host with a port.
REGISTRY_RE = LazyRegex(rf"(?:{_HOST_LABEL}(?:\.{_HOST_LABEL})+|localhost)(?::[0-9]+)?|{_HOST_LABEL}:[0-9]+")
RUNNER_LABEL_RE = LazyRegex(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _check_registry(value: str) -> str | None:
    if REGISTRY_RE.fullmatch(value):
        return None
    return (f"{value!r} is not a registry host (e.g. ghcr.io, registry.example.com:5000); a name without '.' or ':' "
            "is a Docker Hub namespace, whose registry is docker.io")


def _check_label(value: str) -> str | None:
    if RUNNER_LABEL_RE.fullmatch(value):
        return None
    return f"{value!r} is not a runner label (letters, digits, '_', '.', '-'; no space, comma or expression)"


IMAGE_BUILD = Table("image_build", "Where the `images` are built and pushed.", (
    Key("runs_on", strings("non-empty list of runner labels", non_empty=True, check=_check_label,
                           item={"pattern": f"^(?:{RUNNER_LABEL_RE.pattern})$"}),
        ("self-hosted", "image-builder"),
        "The image job's runner labels (its `runs-on`), from the plan of the trusted configuration.",
        shown_default="`[self-hosted, image-builder]`"),
    Key("registry", string("registry host", _check_registry, item={"pattern": f"^(?:{REGISTRY_RE.pattern})$"}),
        GHCR, "The registry every `images.<backend>.repository` is in: ghcr.io logs in with the job's "
        "GITHUB_TOKEN (the caller grants `packages: write`), any other with the `registry-username` and "
        "`registry-password` secrets the caller passes."),
))


@dataclass(frozen=True)
class ImageBuilder:
    """`image_build:` the image job's runner and the registry it pushes to."""

    runs_on: tuple[str, ...] = IMAGE_BUILD.default("runs_on")
    registry: str = IMAGE_BUILD.default("registry")


def _build_builder(s: Any, v: Values) -> Any:
    if v.any_invalid():  # reported; `images` then compares no registry
        return INVALID
    return ImageBuilder(runs_on=v.get("runs_on"), registry=v.get("registry"))


IMAGE_BUILDER = mapping_of(IMAGE_BUILD, _build_builder)


def registry_of(repository: str) -> str:
    """The registry host of an image repository (its first component)."""
    return repository.split("/", 1)[0]


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
        builder = ctx.get("image_build", ImageBuilder())
        repository = values.get("repository")
        if isinstance(builder, ImageBuilder) and registry_of(repository) != builder.registry:
            s.error(values.fields["repository"][1], values.path("repository"),
                    f"{repository!r} is not in the image registry {builder.registry} (image_build.registry)",
                    hint=f"push it to {builder.registry}/..., or set image_build.registry to "
                         f"{registry_of(repository)} (one registry for every image)",
                    code=codes.INCONSISTENT)
            continue
        images[backend] = ImageBuild(repository=values.get("repository"), dockerfile=values.get("dockerfile"),
                                     context=values.get("context"))
    return FrozenMap(images)


IMAGES = Parser("mapping of backend (cpu | cuda | rocm | a declared one) to an image (below)", _parse_images, IMAGE,
                schema={"type": "object", "propertyNames": {"pattern": f"^(?:{BACKEND_NAME})$"},
                        "additionalProperties": TABLE})
