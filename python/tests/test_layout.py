"""test_layout.py: the ctypes structures match include/mixsparse.h (size and every field's
offset, compiled with the C compiler), so a change to the header cannot go unnoticed."""

import ctypes
import os
import shutil
import subprocess

import pytest

from mixsparse import _lib

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include")
STRUCTS = {
    "MatrixStats": "msp_matrix_stats",
    "ConvertOptions": "msp_convert_options",
    "BdmpReport": "msp_bdmp_report",
    "SolverOptions": "msp_solver_options",
    "SolverReport": "msp_solver_report",
    "DeviceProps": "msp_device_props",
    "PagerankOptions": "msp_pagerank_options",
    "PagerankReport": "msp_pagerank_report",
}


def test_structures_match_the_header(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to read the header's layouts with")
    lines = []
    for py, c in STRUCTS.items():
        lines.append('printf("%s sizeof %%zu\\n", sizeof(%s));' % (py, c))
        for field, _ in getattr(_lib, py)._fields_:
            cfield = "lambda" if field == "lambda_" else field
            lines.append('printf("%s %s %%zu\\n", offsetof(%s, %s));' % (py, field, c, cfield))
    src = tmp_path / "layout.c"
    src.write_text("#include <mixsparse.h>\n#include <stddef.h>\n#include <stdio.h>\n"
                   "int main(void) {\n%s\nreturn 0;\n}\n" % "\n".join(lines))  # fmt: skip
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", INCLUDE, str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        py, field, value = line.split()
        cls = getattr(_lib, py)
        got = ctypes.sizeof(cls) if field == "sizeof" else getattr(cls, field).offset
        assert got == int(value), "%s.%s: ctypes %d, C %s" % (py, field, got, value)
    assert len(out.splitlines()) > 100


def test_versions_match_the_header():
    """The package's version (mixsparse.__version__, pyproject.toml) is the header's."""
    import re

    import mixsparse as ms

    header = open(os.path.join(INCLUDE, "mixsparse.h"), encoding="utf-8").read()
    parts = [re.search(r"#define MSP_VERSION_%s (\d+)" % p, header).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]  # fmt: skip
    version = ".".join(parts)
    assert ms.__version__ == version
    pyproject = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyproject.toml")
    assert re.search(r'^version = "%s"$' % re.escape(version), open(pyproject).read(), re.M)
