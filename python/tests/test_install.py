"""test_install.py: `pip install --no-build-isolation` of python/ works offline and the
installed package finds the library copied into it (no MIXSPARSE_LIBRARY, no source tree)."""

import os
import shutil
import subprocess
import sys

import pytest

import mixsparse as ms

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)


def test_pip_install_offline(tmp_path):
    pytest.importorskip("setuptools")
    pytest.importorskip("pip")
    env = dict(os.environ, MIXSPARSE_LIBRARY=ms.library_path, PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")  # fmt: skip
    # pip builds in place: a copy keeps the source tree clean (and concurrent runs apart).
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "tests", "__pycache__", "libmixsparse.so*"))  # fmt: skip
    target = tmp_path / "site"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
         "--no-cache-dir", "--target", str(target), str(source)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    shipped = target / "mixsparse" / "libmixsparse.so"
    assert shipped.exists()
    env.pop("MIXSPARSE_LIBRARY")
    env["PYTHONPATH"] = str(target)
    code = (
        "import numpy as np, mixsparse as ms, mixsparse.linalg as msl\n"
        "A = ms.Matrix.generate('laplace2d:3')\n"
        "assert msl.gmres(A, np.ones(9))[1] == 0\n"
        "print(ms.library_path)\n"
        "print((A @ np.ones(9)).tolist())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    path, y = r.stdout.splitlines()
    assert os.path.realpath(path) == os.path.realpath(str(shipped))
    assert y == str([2.0, 1.0, 2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 2.0])
