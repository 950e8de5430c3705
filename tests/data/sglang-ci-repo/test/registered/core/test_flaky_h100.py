# Disabled: runs nothing, so it needs no __main__ block.
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=90, suite="stage-b-test-1-gpu-large", disabled="flaky on H100")


def test_sometimes():
    assert True
