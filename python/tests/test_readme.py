"""test_readme.py: the Python example of the README runs and computes what it says."""

import os

import numpy as np

MARK = "<!-- python-example: run by python/tests/test_readme.py -->\n```python\n"
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def test_readme_example(capsys):
    text = open(README, encoding="utf-8").read()
    assert MARK in text, "the README lost its Python example"
    code = text.split(MARK, 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 15
    ns = {"__name__": "readme_example"}
    exec(compile(code, "README.md (Python example)", "exec"), ns)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    backend, fmt, prec, err = out[0].split()
    assert backend in ("cpu", "cuda") and prec == "f32"
    # fp32 storage: |y - A x| <= 2^-24 sum |a||x| per row, plus fp64 rounding.
    A, x = ns["A"], ns["x"]
    assert float(err) <= 2.0**-24 * (abs(A) @ abs(x)).max() * (1 + 1e-6)
    assert int(out[1].split()[0]) == np.diff(A.tocsr().indptr).max()
    rep, p = ns["rep"], ns["p"]
    assert rep.converged and out[2].split()[0] == "True" and int(out[2].split()[1]) == rep.iterations
    assert abs(p.sum() - 1.0) <= 1e-14 and (p >= 0).all()
    assert ns["ctx"].closed and ns["M"].closed and ns["B"].closed
