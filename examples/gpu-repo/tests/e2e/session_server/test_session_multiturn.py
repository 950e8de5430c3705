"""E2E: multi-turn rollouts through the session server (protocols v1 and v2).

Simulated here: a toy v1 and v2 session server are driven through the same
conversation; the assistant text each produces must match the reference
exactly. The CI gates track the token-in/token-out mismatch rate per
protocol version.
"""

from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=480, suite="stage-c-4-gpu-h200", labels=["session", "sglang"])
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v1/assistant_text")
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v2/assistant_text")

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))

from ci_policy.sdk import MetricRecorder, rollout_metrics
from minirl.session.server import SessionServer

CONVERSATIONS = [
    [("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?"), ("assistant", "6")],
    [("user", "Name a prime."), ("assistant", "7"), ("user", "Another?"), ("assistant", "11")],
    [("user", "Say hi."), ("assistant", "hi")],
]


def sample_mismatches(server):
    """One entry per sample: the TITO mismatches found, as the rollout logger sees them."""
    per_sample = []
    for turns in CONVERSATIONS:
        sid = server.open(system="You are a calculator.")
        for role, content in turns:
            server.append(sid, role, content)
        expected = "\n".join(c for r, c in turns if r == "assistant")
        per_sample.append([] if server.assistant_text(sid) == expected else [{"type": "assistant_text"}])
        server.close(sid)
    return per_sample


def mismatch_rate(server):
    samples = sample_mismatches(server)
    return sum(bool(s) for s in samples) / len(samples)


class SessionMultiturnTest(unittest.TestCase):
    def test_mismatch_rate_per_version(self):
        for version in ("v1", "v2"):
            with self.subTest(version=version):
                server = SessionServer(version=version)
                self.assertEqual(server.version, version)
                self.assertEqual(mismatch_rate(server), 0.0)
                self.assertEqual(server.open_sessions, 0)

    def test_rollout_metrics_are_recorded_per_version(self):
        # Active only under `ci-policy run` (CI_POLICY_RECORD_DIR); the gates read these keys.
        recorder = MetricRecorder.from_env()
        for step in range(3):
            by_version = {v: sample_mismatches(SessionServer(version=v)) for v in ("v1", "v2")}
            metrics = rollout_metrics(by_version, ci_test=True)
            self.assertEqual(metrics["rollout/tito_session_mismatch_rate/v1/assistant_text"], 0.0)
            self.assertEqual(metrics["rollout/tito_session_mismatch_rate/v2/assistant_text"], 0.0)
            recorder.log(metrics, step)

    def test_prompts_identical_across_versions(self):
        prompts = {}
        for version in ("v1", "v2"):
            server = SessionServer(version=version)
            sid = server.open()
            for role, content in CONVERSATIONS[0]:
                server.append(sid, role, content)
            prompts[version] = server.prompt(sid)
        self.assertEqual(prompts["v1"], prompts["v2"])


if __name__ == "__main__":
    unittest.main()
