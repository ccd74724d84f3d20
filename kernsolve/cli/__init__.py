"""kernsolve's command-line tools, drop-in replacements for LIBSVM's.

=====================  =======================  ==============================
command                LIBSVM tool              module
=====================  =======================  ==============================
``kernsolve-train``    ``svm-train``            :mod:`kernsolve.cli.train`
``kernsolve-predict``  ``svm-predict``          :mod:`kernsolve.cli.predict`
``kernsolve-scale``    ``svm-scale``            :mod:`kernsolve.cli.scale`
``kernsolve-grid``     ``tools/grid.py``        :mod:`kernsolve.cli.grid`
=====================  =======================  ==============================

Each also runs as ``python -m kernsolve.cli.train`` (etc.). See ``doc/cli.md``.
The submodules are not imported here, so ``python -m`` runs them cleanly.
"""
import sys

from .._wait_policy import blas_loading

if "numpy" not in sys.modules:      # a command's process: numpy loads here, its
    with blas_loading():            # OpenBLAS threads told not to wait busy
        import numpy  # noqa: F401
