/* Lets the package build and run without OpenMP: the same names exist either way. */
#ifndef KERNSOLVE_OMP_SHIM_H
#define KERNSOLVE_OMP_SHIM_H
#ifdef _OPENMP
#include <omp.h>
static inline int ks_openmp_enabled(void) { return 1; }
static inline int ks_omp_max_threads(void) { return omp_get_max_threads(); }
static inline int ks_omp_num_procs(void) { return omp_get_num_procs(); }
#else
static inline int ks_openmp_enabled(void) { return 0; }
static inline int ks_omp_max_threads(void) { return 1; }
static inline int ks_omp_num_procs(void) { return 1; }
#endif
/* GNU OpenMP (libgomp), whose threads do not survive fork() (kernsolve/_threads.py). */
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
static inline int ks_openmp_is_gnu(void) { return 1; }
#else
static inline int ks_openmp_is_gnu(void) { return 0; }
#endif
#endif
