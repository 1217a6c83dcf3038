"""The generated docs are current with the code."""
import pathlib
import subprocess
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent


class GeneratedDocsTest(unittest.TestCase):
    def test_api_coverage_is_current(self):
        result = subprocess.run([sys.executable, str(ROOT / "tools/gen_api_coverage.py"), "--check"],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
    unittest.main()
