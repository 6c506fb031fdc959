"""setup.py: builds the mixsparse wheel with the already built libmixsparse.so inside it.

The library is taken from $MIXSPARSE_LIBRARY, else from the source tree's build directory
($MIXSPARSE_BUILD, default ../build): run `make` first. No compiler is needed here.
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def built_library():
    """The path of the libmixsparse.so to ship, or SystemExit saying how to make one."""
    path = os.environ.get("MIXSPARSE_LIBRARY")
    if not path:
        build = os.environ.get("MIXSPARSE_BUILD", os.path.join(HERE, "..", "build"))
        path = os.path.join(build, "libmixsparse.so")
    if not os.path.exists(path):
        raise SystemExit(
            "mixsparse: %s not found: run `make` in the source tree first, or set "
            "MIXSPARSE_LIBRARY (the .so) or MIXSPARSE_BUILD (its build directory)" % path
        )
    return os.path.realpath(path)


class BuildPyWithLibrary(build_py):
    """build_py that also copies libmixsparse.so next to the package's modules."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "mixsparse", "libmixsparse.so")
        shutil.copyfile(built_library(), target)
        os.chmod(target, 0o755)


class BinaryDistribution(Distribution):
    """The wheel holds a native library: tag it for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
