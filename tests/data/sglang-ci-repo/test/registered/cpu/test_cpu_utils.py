import importlib.util
import pathlib


def _load_module(name):
    path = pathlib.Path(__file__).parents[2] / "ci" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The CPU job does not install the package, so the markers are loaded from their file.
register_cpu_ci = _load_module("ci_register").register_cpu_ci

register_cpu_ci(est_time=30, suite="stage-a-cpu-only")


def test_parse_args():
    assert True
