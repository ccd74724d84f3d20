"""What the compiled core knows about OpenMP (see kernsolve/_threads.py)."""


def openmp_enabled():
    """True when the extensions were compiled with OpenMP."""
    return bool(ks_openmp_enabled())


def max_threads():
    """OpenMP's default team size (honours OMP_NUM_THREADS); 1 without OpenMP."""
    return ks_omp_max_threads()


def num_procs():
    """Processors OpenMP sees; 1 without OpenMP."""
    return ks_omp_num_procs()


def openmp_is_gnu():
    """True when the OpenMP runtime is GCC's libgomp (its threads do not survive fork)."""
    return bool(ks_openmp_is_gnu())
