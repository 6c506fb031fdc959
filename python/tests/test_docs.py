"""test_docs.py: every public class, function, method and property has a docstring."""

import inspect

import mixsparse as ms


def public_members():
    for name in ms.__all__:
        obj = getattr(ms, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield name, obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__matmul__"):
                    continue
                if inspect.isfunction(member) or isinstance(member, (property, classmethod, staticmethod)):
                    yield "%s.%s" % (name, attr), member


def test_every_public_member_is_documented():
    undocumented = []
    for name, obj in public_members():
        if name.endswith(".__init__"):
            continue  # documented by the class
        doc = obj.__func__.__doc__ if isinstance(obj, (classmethod, staticmethod)) else obj.__doc__
        if not (doc and doc.strip()):
            undocumented.append(name)
    assert not undocumented, "no docstring: " + ", ".join(undocumented)
    assert len(list(public_members())) > 60
