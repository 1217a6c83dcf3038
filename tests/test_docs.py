"""The generated docs are current with the code."""
import pathlib
import re
import subprocess
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent


class GeneratedDocsTest(unittest.TestCase):
    def test_api_coverage_is_current(self):
        try:
            import botocore  # noqa: F401 - the generator reads botocore's ECS model
        except ImportError:
            self.skipTest(f"{sys.executable} has no botocore (scripts/python-env finds a python3 that has)")
        result = subprocess.run([sys.executable, str(ROOT / "tools/gen_api_coverage.py"), "--check"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_ec2_model_subset_is_current(self):
        """src/ec2/api/models/ec2-subset.json is what tools/gen_ec2_model.py cuts from botocore."""
        try:
            import botocore  # noqa: F401 - the generator reads botocore's EC2 model
        except ImportError:
            self.skipTest(f"{sys.executable} has no botocore (scripts/python-env finds a python3 that has)")
        result = subprocess.run([sys.executable, str(ROOT / "tools/gen_ec2_model.py"), "--check"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_model_slices_are_current(self):
        """The SSM, Secrets Manager, CloudWatch Logs and Cloud Map model slices are what tools/gen_model_slice.py cuts."""
        try:
            import botocore  # noqa: F401 - the generator reads botocore's models
        except ImportError:
            self.skipTest(f"{sys.executable} has no botocore (scripts/python-env finds a python3 that has)")
        result = subprocess.run([sys.executable, str(ROOT / "tools/gen_model_slice.py"), "--check"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)


def _gtest_names():
    """Every GoogleTest case under src/ as (suite, name)."""
    names = set()
    for path in (ROOT / "src").rglob("*_test.cc"):
        for suite, name in re.findall(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", path.read_text()):
            names.add((suite, name))
    return names


def _python_tests(path):
    """{class name: set of test method names} of a tests/ module, read from its source."""
    classes, current = {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"class (\w+)", line)
        if m:
            current = classes.setdefault(m.group(1), set())
        m = re.match(r"\s+def (test\w*)", line)
        if m and current is not None:
            current.add(m.group(1))
    return classes


class SecurityDocTest(unittest.TestCase):
    """docs/security.md names, on every guarantee, tests that exist (a renamed test must rename its row)."""

    def test_every_named_test_exists(self):
        text = (ROOT / "docs/security.md").read_text()
        table = text[text.index("## Guarantees and their tests"):]
        gtests = _gtest_names()
        missing = []
        for row in (line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| Guarantee")):
            proof = row.rstrip(" |").rsplit(" | ", 1)[-1]
            module, cls = None, None
            for name in re.findall(r"`([^`]+)`", proof):
                if name.startswith("tests/") or name.startswith("…"):
                    if name.startswith("tests/"):
                        module = name.split("::")[0]
                        path = ROOT / module
                        if not path.exists():
                            missing.append(name)
                            continue
                        if "::" not in name:
                            continue
                        cls, _, method = name.split("::")[1].partition(".")
                    else:
                        rest = name[1:]
                        if "." in rest:
                            cls, _, method = rest.partition(".")
                        else:
                            method = rest
                    tests = _python_tests(ROOT / module)
                    if cls not in tests or (method and method not in tests[cls]):
                        missing.append(name)
                elif re.fullmatch(r"\w+/[\w*]+", name):  # a golden API case: Action/case
                    action, _, case = name.partition("/")
                    if not list((ROOT / "src/ecs/api/testdata" / action).glob(case + ".*")):
                        missing.append(name)
                elif re.fullmatch(r"\w+\.(\w+|\*)", name):
                    suite, test = name.split(".")
                    if not any(s == suite and (test == "*" or t == test) for s, t in gtests):
                        missing.append(name)
                else:
                    missing.append(f"unparsed: {name}")
        self.assertEqual(missing, [])


if __name__ == "__main__":
    unittest.main()
