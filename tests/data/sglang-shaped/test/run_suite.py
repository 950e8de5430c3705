"""The suite collector, shaped like sglang's test/run_suite.py: every *.py file under registered/."""

import argparse
import glob

from sglang.test.ci.ci_utils import collect_registrations, run_files

HW_MAPPING = {"cuda": "CUDA", "amd": "AMD", "cpu": "CPU", "npu": "NPU", "xpu": "XPU"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hw", default="cuda", choices=sorted(HW_MAPPING))
    parser.add_argument("--suite", required=True)
    parser.add_argument("--nightly", action="store_true")
    parser.add_argument("--auto-partition-id", type=int)
    parser.add_argument("--auto-partition-size", type=int)
    args = parser.parse_args()
    files = sorted(glob.glob("registered/**/*.py", recursive=True))
    registrations = collect_registrations(files, HW_MAPPING[args.hw], args.suite, args.nightly)
    return run_files(registrations, args.auto_partition_id, args.auto_partition_size)


if __name__ == "__main__":
    raise SystemExit(main())
