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

from minirl.session.server import SessionServer

CONVERSATIONS = [
    [("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?"), ("assistant", "6")],
    [("user", "Name a prime."), ("assistant", "7"), ("user", "Another?"), ("assistant", "11")],
    [("user", "Say hi."), ("assistant", "hi")],
]


def mismatch_rate(server):
    mismatches = 0
    for turns in CONVERSATIONS:
        sid = server.open(system="You are a calculator.")
        for role, content in turns:
            server.append(sid, role, content)
        expected = "\n".join(c for r, c in turns if r == "assistant")
        mismatches += server.assistant_text(sid) != expected
        server.close(sid)
    return mismatches / len(CONVERSATIONS)


class SessionMultiturnTest(unittest.TestCase):
    def test_mismatch_rate_per_version(self):
        for version in ("v1", "v2"):
            with self.subTest(version=version):
                server = SessionServer(version=version)
                self.assertEqual(server.version, version)
                self.assertEqual(mismatch_rate(server), 0.0)
                self.assertEqual(server.open_sessions, 0)

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
