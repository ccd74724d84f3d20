"""Where the examples write their files: an output folder, never examples/ itself;
and their figures' matplotlib, when it is installed.

Every example that writes files takes ``--out-dir DIR`` (default
``kernsolve-output`` under the current directory, a folder ``.gitignore``
ignores). The examples folder is refused: its files (the scripts, the figure
that doc/dsg.md shows) are tracked and must not be overwritten by a run.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = "kernsolve-output"


def add_argument(parser):
    """``--out-dir DIR`` on an argparse parser."""
    parser.add_argument("--out-dir", default=DEFAULT,
                        help=f"folder for the output files, created if needed (default: "
                             f"./{DEFAULT}; not the examples folder, whose files are tracked)")


def folder(parser, path):
    """The output folder ``path``, created; a parser error if it is examples/."""
    if os.path.realpath(path) == os.path.realpath(HERE):
        parser.error(f"--out-dir {path}: that is the examples folder, whose files are "
                     "tracked; give another folder")
    os.makedirs(path, exist_ok=True)
    return path


def pyplot(written):
    """``matplotlib.pyplot`` on the Agg backend, or None (after saying that only
    ``written`` was written) when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"wrote {written} (install matplotlib for the figure)")
        return None
    return plt
