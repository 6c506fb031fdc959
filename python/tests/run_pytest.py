"""run_pytest.py: CTest's entry to the Python tests: skipped (exit 77, saying why) when pytest,
numpy or scipy is not installed; otherwise pytest's own exit status."""

import importlib.util
import os
import sys

missing = [m for m in ("pytest", "numpy", "scipy") if importlib.util.find_spec(m) is None]
if missing:
    print("python tests SKIPPED: %s not installed for %s (Debian: python3-pytest, python3-numpy, "
          "python3-scipy)" % (", ".join(missing), sys.executable))
    sys.exit(77)

import pytest  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", here] + sys.argv[1:]))
