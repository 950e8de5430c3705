"""E2E: tool-calling sessions through the session server on one H200.

Simulated here: assistant turns interleaved with tool results on toy v1 and
v2 session servers, plus a toy gradient-norm trace for the ``train/grad_norm``
gate.
"""

from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=360, suite="stage-b-1-gpu-h200", labels=["session"])
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v1/assistant_text")
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v2/assistant_text")
register_ci_gate(metric_key="train/grad_norm", steps="all", constraint={"rel_up": 0.5, "abs_floor_up": 0.05, "rel_down": 0.5, "abs_floor_down": 0.05})

import math
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))

from ci_policy.sdk import MetricRecorder, rollout_metrics
from minirl.session.server import SessionServer

TOOL_TURNS = [
    ("user", "Weather in Paris?"),
    ("assistant", '{"tool": "weather", "city": "Paris"}'),
    ("tool", '{"temp_c": 18}'),
    ("assistant", "It is 18 C in Paris."),
]


class SessionToolCallsTest(unittest.TestCase):
    def test_tool_turns_v1_v2(self):
        texts = {}
        for version in ("v1", "v2"):
            server = SessionServer(version=version)
            sid = server.open()
            for role, content in TOOL_TURNS:
                server.append(sid, role, content)
            self.assertEqual(len(server.history(sid)), 4)
            texts[version] = (server.prompt(sid), server.assistant_text(sid))
        self.assertEqual(texts["v1"], texts["v2"])
        self.assertTrue(texts["v2"][1].endswith("It is 18 C in Paris."))
        # One sample per version, no mismatches; each version's series is recorded on its own.
        metrics = rollout_metrics({v: [[]] for v in ("v1", "v2")}, ci_test=True)
        MetricRecorder.from_env().log(metrics, step=0)

    def test_grad_norm_trace_is_finite_and_bounded(self):
        grads = [[0.1 * (i + 1) / (step + 1) for i in range(4)] for step in range(10)]
        norms = [math.sqrt(sum(g * g for g in gs)) for gs in grads]
        self.assertTrue(all(math.isfinite(n) and n > 0 for n in norms))
        self.assertLessEqual(norms[-1], norms[0])
        recorder = MetricRecorder.from_env()
        for step, norm in enumerate(norms):
            recorder.log({"train/grad_norm": norm}, step)


if __name__ == "__main__":
    unittest.main()
