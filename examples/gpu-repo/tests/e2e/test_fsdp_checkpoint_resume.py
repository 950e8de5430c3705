"""E2E: FSDP checkpoint save / resume on four H200 GPUs.

Currently disabled in CI (flaky on H200 driver 580). Simulated here: a
training state survives a JSON round trip and resuming reproduces the
uninterrupted run.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=420, suite="stage-c-4-gpu-h200", labels=["fsdp"], disabled="flaky on H200 driver 580, tracked in #1234")

import json
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.backends.fsdp import FSDPConfig


def train(state, steps):
    for _ in range(steps):
        state = {"step": state["step"] + 1, "w": state["w"] * 0.9 + 0.1}
    return state


class FSDPCheckpointResumeTest(unittest.TestCase):
    def test_resume_matches_uninterrupted(self):
        full = train({"step": 0, "w": 0.0}, 10)
        ckpt = json.dumps(train({"step": 0, "w": 0.0}, 4))
        resumed = train(json.loads(ckpt), 6)
        self.assertEqual(resumed["step"], full["step"])
        self.assertAlmostEqual(resumed["w"], full["w"])

    def test_config_round_trip(self):
        cfg = FSDPConfig(cpu_offload=True)
        self.assertEqual(FSDPConfig(**json.loads(json.dumps(cfg.__dict__))), cfg)


if __name__ == "__main__":
    unittest.main()
