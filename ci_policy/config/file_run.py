"""`file_run:` where `/rerun-test` runs one file: the image per backend, its tag and the timeout.

- In: the `file_run` mapping; every key is optional; `image` keys are backends (built in
  or declared under `backends`); `prefer` is an ordered list of backends.
- Out: a frozen `FileRunConfig`; `image` is a read-only mapping backend -> image repository.
- Refused: an image repository that is not one (or carries a tag), an invalid tag, a
  non-positive timeout factor or minimum; a `prefer` that is not a list, names an unknown
  backend or one backend twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes
from ci_policy.config.backends import BACKEND_NAME, BACKEND_SCHEMA, backends_of, check_backend
from ci_policy.config.fields import Context, FrozenMap, Key, Parser, Table, Values, mapping_of, number, string
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.numbers import MAX_FACTOR, MAX_SECONDS
from ci_policy.read.yamlnodes import INVALID, Schema

IMAGE_TAG_RE = LazyRegex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
IMAGE_REPO_RE = LazyRegex(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")


IMAGE_REPO_SCHEMA = {"type": "string", "pattern": f"^(?:{IMAGE_REPO_RE.pattern})$"}


def check_repo(value: str) -> str | None:
    """Why `value` is not an image repository without a tag, or None (also `images.<backend>`)."""
    if IMAGE_REPO_RE.fullmatch(value):
        return None
    return f"{value!r} is not an image repository (e.g. ghcr.io/org/ci-cuda, without a tag)"


def _check_tag(value: str) -> str | None:
    if IMAGE_TAG_RE.fullmatch(value):
        return None
    return f"{value!r} is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})"


def _parse_image(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    backends = backends_of(ctx)
    if backends is INVALID:
        return INVALID
    table = s.mapping(node, where, optional=backends.names) or {}
    image: dict[str, str] = {}
    for backend, (_key, value_node) in table.items():
        repo = s.string(value_node, f"{where}.{backend}", check=check_repo)
        if repo is not INVALID:
            image[backend] = repo
    return FrozenMap(image)


PREFER_HINT = "write the backends in the order to choose them, each once, e.g. prefer: [cuda, rocm]"


def _parse_prefer(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    if not isinstance(node, yaml.SequenceNode):
        s.error(node, where, f"expected a list of backends, got {s.describe(node)}", hint=PREFER_HINT,
                code=codes.WRONG_TYPE)
        return INVALID
    backends = backends_of(ctx)
    out: dict[str, int] = {}  # backend -> its index
    ok = True
    for i, item in enumerate(node.value):
        at = f"{where}[{i}]"
        if backends is INVALID:  # reported where it was declared; nothing to check against
            value = s.string(item, at)
            ok = False
            continue
        if not (isinstance(item, yaml.ScalarNode) and item.tag.endswith(":str")):
            s.error(item, at, f"expected a backend name, got {s.describe(item)}", hint=PREFER_HINT,
                    code=codes.WRONG_TYPE)
            ok = False
            continue
        value = check_backend(s, item, at, backends)
        if value is INVALID:
            ok = False
        elif value in out:
            s.error(item, at, f"{value!r} is listed twice (first as {where}[{out[value]}])",
                    hint="list each backend once, in the order to choose them", code=codes.DUPLICATE)
            ok = False
        else:
            out[value] = i
    return tuple(out) if ok else INVALID


FILE_RUN_TABLE = Table("file_run", "How `/rerun-test` places one test file.", (
    Key("image", Parser("mapping of backend (cpu | cuda | rocm | a declared one) to an image repository (no tag)",
                        _parse_image, schema={"type": "object",
                                              "propertyNames": {"pattern": f"^(?:{BACKEND_NAME})$"},
                                              "additionalProperties": IMAGE_REPO_SCHEMA}),
        FrozenMap(), "Container image of each backend's rerun job.",
        shown_default="none"),
    Key("default_tag", string("image tag", _check_tag, item={"pattern": f"^(?:{IMAGE_TAG_RE.pattern})$"}), "latest",
        "Image tag used unless the command names one."),
    Key("timeout_factor", number(0, MAX_FACTOR, strict=True), 3.0,
        "Timeout = `max(min_timeout, ceil(timeout_factor * est_time))`, at most the stage's `timeout_per_file`."),
    Key("min_timeout", number(0, MAX_SECONDS, strict=True), 900.0, "The smallest timeout, in seconds."),
    Key("prefer", Parser("list of backends (cpu | cuda | rocm | a declared one), each once", _parse_prefer,
                         schema={"type": "array", "items": BACKEND_SCHEMA, "uniqueItems": True}),
        (), "When a file has several enabled registrations and the command names no backend or stage: "
            "the registration of the first backend listed that the file has (none listed: the command "
            "must name one).", shown_default="none"),
))


@dataclass(frozen=True)
class FileRunConfig:
    """`file_run:` how one rerun file is placed: image per backend, tag and timeout."""

    image: FrozenMap[str, str] = FILE_RUN_TABLE.default("image")  # backend -> repository (no tag)
    default_tag: str = FILE_RUN_TABLE.default("default_tag")
    timeout_factor: float = FILE_RUN_TABLE.default("timeout_factor")
    min_timeout: float = FILE_RUN_TABLE.default("min_timeout")
    prefer: tuple[str, ...] = FILE_RUN_TABLE.default("prefer")  # backends, first choice first

    def image_for(self, backend: str) -> str | None:
        return self.image.get(backend)


def _build(s: Schema, v: Values) -> FileRunConfig:
    return FileRunConfig(image=v.get("image"), default_tag=v.get("default_tag"),
                         timeout_factor=v.get("timeout_factor"), min_timeout=v.get("min_timeout"),
                         prefer=v.get("prefer"))


FILE_RUN = mapping_of(FILE_RUN_TABLE, _build)
