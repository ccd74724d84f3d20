"""Small datasets bundled with kernsolve (see ``datasets/README.md``)."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def dataset_path(name="heart_scale"):
    """Path of a bundled LIBSVM-format file (xz-compressed), e.g. ``heart_scale``."""
    path = os.path.join(_HERE, name + ".xz")
    if not os.path.exists(path):
        available = sorted(f[:-3] for f in os.listdir(_HERE) if f.endswith(".xz"))
        raise ValueError(f"no bundled dataset {name!r}; available: {available}")
    return path
