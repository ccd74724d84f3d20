cdef extern from "_omp_shim.h" nogil:
    int ks_openmp_enabled()
    int ks_omp_max_threads()
    int ks_omp_num_procs()
    int ks_openmp_is_gnu()
