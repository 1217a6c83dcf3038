#!/usr/bin/env python3
"""Runs the multi-process suite (tests/test_*.py, or the modules named) verbosely, as
`python3 -m unittest discover -s tests -p 'test_*.py' -v` does, and ends with each module's wall time,
slowest first: what scripts/test uses to keep a fresh-clone CI run well inside its time limit.

Nothing a module makes on the host may outlive it: the network namespaces that appear while a module
runs and are still there when it ends are reported as that module's leak, removed (with a VPC
router's host link, and so its routes) so that they cannot answer for a later module's task at the
same address, and fail the run.

    python3 tests/run_suite.py                       # every module
    python3 tests/run_suite.py test_tasks test_ec2   # these modules only
"""
import collections
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
NETNS_DIR = "/var/run/netns"


def namespaces():
    try:
        return set(os.listdir(NETNS_DIR))
    except OSError:
        return set()


def remove_namespace(name):
    """`ip netns del`, and first the host end of a VPC router's transit link (named as the namespace)."""
    if name.startswith("pdv-"):
        subprocess.run(["ip", "link", "del", "dev", name], capture_output=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


class TimedResult(unittest.TextTestResult):
    """Charges the time since the previous test ended to each test's module, so that class set-ups
    (servers started in setUpClass) count where they belong."""
    module_seconds = collections.Counter()
    test_seconds = collections.Counter()  # test id -> its time, set-ups before it included
    last = time.monotonic()
    leaks = {}  # module -> the network namespaces it left

    def stopTest(self, test):
        super().stopTest(test)
        now = time.monotonic()
        TimedResult.module_seconds[type(test).__module__.split(".")[0]] += now - TimedResult.last
        TimedResult.test_seconds[test.id()] += now - TimedResult.last
        TimedResult.last = now


def iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from iter_tests(t)
        else:
            yield t


def main(argv):
    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if argv:
        suite = unittest.TestSuite(loader.loadTestsFromName(name) for name in argv)
    else:
        suite = loader.discover(HERE, pattern="test_*.py")
    started = TimedResult.last = time.monotonic()

    def module_by_module(result):
        # Each module's suite runs as a top-level one, so its classes and module are torn down when
        # it returns: what is left then is its own.
        for module_suite in suite:
            module = next(iter(t.id().split(".")[0] for t in iter_tests(module_suite)), "?")  # run empties it
            before = namespaces()
            module_suite.run(result)
            left = sorted(namespaces() - before)
            if left:
                TimedResult.leaks.setdefault(module, []).extend(left)
                for name in left:
                    remove_namespace(name)

    result = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(module_by_module)
    total = time.monotonic() - started
    print(f"\nwall time by module ({total:.0f} s in all):", file=sys.stderr)
    for module, seconds in TimedResult.module_seconds.most_common():
        print(f"  {seconds:7.1f} s  {module}", file=sys.stderr)
    print("the slowest tests (a class's set-up counted in its first test):", file=sys.stderr)
    for test, seconds in TimedResult.test_seconds.most_common(25):
        print(f"  {seconds:7.1f} s  {test}", file=sys.stderr)
    for module, names in TimedResult.leaks.items():
        print(f"LEAK: {module} left {len(names)} network namespace(s) behind (removed): {' '.join(names)}",
              file=sys.stderr)
    return 0 if result.wasSuccessful() and not TimedResult.leaks else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
