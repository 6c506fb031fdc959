"""conftest.py: the tests import the package from the source tree (python/), with the library
at $MIXSPARSE_LIBRARY (set by CTest) or in build/."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import mixsparse as ms  # noqa: E402


def available_backends():
    """"cpu", plus "cuda" when a CUDA context can be made here."""
    out = ["cpu"]
    try:
        ms.Context("cuda").close()
        out.append("cuda")
    except (ms.NotBuiltError, ms.NoDeviceError):
        pass
    return out


BACKENDS = available_backends()


@pytest.fixture(params=BACKENDS)
def ctx(request):
    """A context on each backend this machine has; closed (with its objects) after the test."""
    c = ms.Context(request.param)
    yield c
    c.close()


@pytest.fixture
def rng():
    """The tests' seeded generator."""
    return np.random.default_rng(20261123)
