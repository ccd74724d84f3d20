# kernsolve's own thread team (_team.h: why, how, and the load watch).  The
# SMO solver starts one per solve and hands it to the kernel engine for row
# fills; everything else keeps OpenMP.

cdef extern from "_team.h" nogil:
    # A job: chunk c of nc (each chunk run once, by some thread of the team).
    ctypedef void (*ks_job_fn)(void* ctx, int c, int nc) noexcept nogil

    ctypedef struct ks_team:
        pass

    ctypedef struct ks_load:
        int spin
        int trial
        double since
        double backoff

    const double KS_TEAM_WATCH_SECONDS

    ks_team* ks_team_start(int n, long long spin_ns, int adaptive)
    void ks_team_stop(ks_team* t)
    void ks_team_run(ks_team* t, ks_job_fn fn, void* ctx, int nc)
    int ks_team_watch(ks_team* t, double now)
    int ks_team_spinning(const ks_team* t)
    int ks_team_size(const ks_team* t)
    Py_ssize_t ks_grab(Py_ssize_t* next, Py_ssize_t step)

    # the load decision (pure logic) and its process-wide memory
    void ks_load_init(ks_load* s)
    int ks_load_step(ks_load* s, double now, double wait, int others, int n, int cpus)
    int ks_load_remembered()
    void ks_load_forget()
