# Excluded from discovery (discovery.exclude): an old layout the NPU team runs by hand.
from sglang.test.ci.ci_register import register_npu_ci

register_npu_ci(est_time=400, suite="ascend-legacy")
