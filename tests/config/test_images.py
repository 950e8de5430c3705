"""`images:` and `backends.<name>.container_options`: what a stage job's container is."""

from __future__ import annotations

import pytest
from config_cases import HEAD, VALID, coded, coded_err

from ci_policy.config.backends import DEFAULT_CONTAINER_OPTIONS
from ci_policy.config.fields import FrozenMap
from ci_policy.config.images import ImageBuild, ImageBuilder
from ci_policy.config.top import parse_config

ROCM_OPTIONS = "--device /dev/kfd --device /dev/dri --group-add video --group-add render"


def test_the_default_container_options_are_one_table():
    assert DEFAULT_CONTAINER_OPTIONS == {"cuda": "--gpus all", "rocm": ROCM_OPTIONS}


def test_without_configuration_each_backend_gets_its_default_options():
    backends = parse_config(VALID).backends
    assert [backends.container_options_for(b) for b in ("cpu", "cuda", "rocm", "npu")] == [
        "", "--gpus all", ROCM_OPTIONS, ""]


def test_container_options_override_the_default_and_a_builtin_keeps_what_it_is():
    config = parse_config(HEAD + "backends:\n  cpu: {container_options: --shm-size=1g}\n"
                          "  cuda: {container_options: \"--gpus all --ipc host\"}\n  npu:\n"
                          "  xpu: {container_options: --device /dev/dri}\n"
                          "stages:\n  - {name: cpu, backend: cpu}\n")
    backends = config.backends
    assert backends.accelerators == ("cuda", "rocm", "npu", "xpu")
    assert [backends.container_options_for(b) for b in backends.names] == [
        "--shm-size=1g", "--gpus all --ipc host", ROCM_OPTIONS, "", "--device /dev/dri"]


@pytest.mark.parametrize("backends, needle, message, code", [
    ("backends: {cuda: {container_options: 3}}\n", "3}", "backends.cuda.container_options: expected a string, "
     "got an integer ('3')", "CP104"),
    ('backends: {cuda: {container_options: "--gpus all\\n--privileged"}}\n', '"--gpus',
     "backends.cuda.container_options: '--gpus all\\n--privileged' has a control character; container options "
     "are one line", "CP105"),
    ("backends: {cpu: {accelerator: true, container_options: x}}\n", "cpu",
     "backends.cpu: cpu is built in with accelerator: false and cannot be redeclared differently", "CP108"),
])
def test_invalid_container_options_are_located(backends, needle, message, code):
    text = HEAD + backends + "stages:\n  - {name: cpu, backend: cpu}\n"
    assert [e[:4] + e[5:] for e in coded(text)] == [coded_err(text, needle, message, code)[:4] + (code,)]


def test_images_default_to_none():
    assert parse_config(VALID).images == FrozenMap()


def test_images_are_read_per_backend_with_a_default_context():
    config = parse_config(VALID + "backends: {npu: {}}\nimage_build: {registry: 'registry.example:5000'}\nimages:\n"
                          "  cuda: {repository: registry.example:5000/org/ci-cuda,"
                          " dockerfile: docker/cuda.Dockerfile}\n"
                          "  npu: {repository: 'registry.example:5000/org/ci-npu',"
                          " dockerfile: ./docker//npu.Dockerfile, context: docker}\n")
    assert config.images == {
        "cuda": ImageBuild(repository="registry.example:5000/org/ci-cuda", dockerfile="docker/cuda.Dockerfile",
                           context="."),
        "npu": ImageBuild(repository="registry.example:5000/org/ci-npu", dockerfile="docker/npu.Dockerfile",
                          context="docker"),
    }
    assert config.image_build == ImageBuilder(runs_on=("self-hosted", "image-builder"),
                                              registry="registry.example:5000")


def test_the_image_builder_defaults_to_the_self_hosted_image_builder_and_ghcr():
    assert parse_config(VALID).image_build == ImageBuilder(runs_on=("self-hosted", "image-builder"),
                                                           registry="ghcr.io")
    config = parse_config(VALID + "image_build: {runs_on: [self-hosted, docker, x64]}\n")
    assert config.image_build == ImageBuilder(runs_on=("self-hosted", "docker", "x64"), registry="ghcr.io")


@pytest.mark.parametrize("build, needle, message, hint, code", [
    ("image_build: {registry: myorg}\nimages: {cuda: {repository: myorg/ci-cuda, dockerfile: d}}\n", "myorg}",
     "image_build.registry: 'myorg' is not a registry host (e.g. ghcr.io, registry.example.com:5000); a name "
     "without '.' or ':' is a Docker Hub namespace, whose registry is docker.io", None, "CP105"),
    ("image_build: {runs_on: [self-hosted, '${{ vars.BUILDER }}']}\n", "'${{",
     "image_build.runs_on[1]: '${{ vars.BUILDER }}' is not a runner label (letters, digits, '_', '.', '-'; no "
     "space, comma or expression)", None, "CP105"),
    ("image_build: {runs_on: []}\n", "[]", "image_build.runs_on: must not be empty", None, "CP105"),
    ("images: {cuda: {repository: quay.io/org/ci-cuda, dockerfile: d}}\n", "quay",
     "images.cuda.repository: 'quay.io/org/ci-cuda' is not in the image registry ghcr.io (image_build.registry)",
     "push it to ghcr.io/..., or set image_build.registry to quay.io (one registry for every image)", "CP108"),
    ("image_build: {registry: quay.io}\nimages:\n  cuda: {repository: quay.io/org/ci-cuda, dockerfile: d}\n"
     "  rocm: {repository: ghcr.io/org/ci-rocm, dockerfile: d}\n", "ghcr.io/org",
     "images.rocm.repository: 'ghcr.io/org/ci-rocm' is not in the image registry quay.io (image_build.registry)",
     "push it to quay.io/..., or set image_build.registry to ghcr.io (one registry for every image)", "CP108"),
])
def test_a_bad_registry_or_builder_runner_is_located(build, needle, message, hint, code):
    text = VALID + build
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


@pytest.mark.parametrize("images, needle, message, code", [
    ("images: {cuda: {repository: ghcr.io/org/ci-cuda:latest, dockerfile: d}}\n", "ghcr",
     "images.cuda.repository: 'ghcr.io/org/ci-cuda:latest' is not an image repository (e.g. ghcr.io/org/ci-cuda, "
     "without a tag)", "CP105"),
    ("images: {cuda: {repository: ghcr.io/org/ci-cuda, dockerfile: ../Dockerfile}}\n", "../",
     "images.cuda.dockerfile: '../Dockerfile' leaves the repository ('..' is not allowed)", "CP105"),
    ("images: {cuda: {repository: ghcr.io/org/ci-cuda, dockerfile: d, context: /abs}}\n", "/abs",
     "images.cuda.context: '/abs' is absolute; paths are relative to the repository root", "CP105"),
    ("images: {cuda: {repository: ghcr.io/org/ci-cuda}}\n", "{repository",
     "images.cuda.dockerfile: required key is missing", "CP103"),
    ("images: {npu: {repository: ghcr.io/org/ci-npu, dockerfile: d}}\n", "npu",
     "images.npu: unknown key", "CP102"),
    ("images: {cuda: {repository: ghcr.io/org/ci-cuda, dockerfile: d, tag: x}}\n", "tag:",
     "images.cuda.tag: unknown key", "CP102"),
])
def test_invalid_images_are_located(images, needle, message, code):
    text = VALID + images
    (error,) = coded(text)
    expected = coded_err(text, needle, message, code)
    assert error[:3] + error[5:] == expected[:3] + expected[5:]
    assert error[3].startswith(message)
