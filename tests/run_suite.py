#!/usr/bin/env python3
"""Runs the multi-process suite (tests/test_*.py, or the modules named) verbosely, as
`python3 -m unittest discover -s tests -p 'test_*.py' -v` does, and ends with each module's wall time,
slowest first: what scripts/test uses to keep a fresh-clone CI run well inside its time limit.

    python3 tests/run_suite.py                       # every module
    python3 tests/run_suite.py test_tasks test_ec2   # these modules only
"""
import collections
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class TimedResult(unittest.TextTestResult):
    """Charges the time since the previous test ended to each test's module, so that class set-ups
    (servers started in setUpClass) count where they belong."""
    module_seconds = collections.Counter()
    last = time.monotonic()

    def stopTest(self, test):
        super().stopTest(test)
        now = time.monotonic()
        TimedResult.module_seconds[type(test).__module__.split(".")[0]] += now - TimedResult.last
        TimedResult.last = now


def main(argv):
    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if argv:
        suite = unittest.TestSuite(loader.loadTestsFromName(name) for name in argv)
    else:
        suite = loader.discover(HERE, pattern="test_*.py")
    started = TimedResult.last = time.monotonic()
    result = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(suite)
    total = time.monotonic() - started
    print(f"\nwall time by module ({total:.0f} s in all):", file=sys.stderr)
    for module, seconds in TimedResult.module_seconds.most_common():
        print(f"  {seconds:7.1f} s  {module}", file=sys.stderr)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
