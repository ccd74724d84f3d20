/* kernsolve's own thread team for a solver's inner loop (SMO; issue 16, item 4).
 *
 * Why not OpenMP there: on a 2-core VM one fork/join of libgomp's threads
 * costs ~37 us under the passive wait policy (a sleeping thread is woken
 * through the hypervisor) and ~0.8 us when they spin, and an SMO step makes
 * two or three of them in ~80 us.  Threads that spin while another process
 * is busy take the CPU from the solver's own master thread (doc/threads.md,
 * "Idle threads on a busy machine").  This team spins only while the machine
 * has room for it:
 *
 *  - Workers live for one solve (ks_team_start .. ks_team_stop).  Between two
 *    jobs an idle worker spins for at most spin_ns, then sleeps on a futex.
 *  - A job is the chunks c = 0..nc-1 of fn(ctx, c, nc).  The master posts it,
 *    runs chunk 0, then runs every chunk no worker has claimed yet, and waits
 *    only for the chunks workers are running.  A worker that is slow to wake
 *    (asleep, or preempted) never holds the master up: at worst the master
 *    does the whole job alone, as the serial loop would.  Which thread runs a
 *    chunk never changes what the chunk computes.
 *  - The load watch (ks_team_watch, called by the solver every
 *    KS_TEAM_WATCH_SECONDS): the share of our threads' runnable time spent
 *    waiting for a CPU (run_delay in /proc/thread-self/schedstat), and the
 *    runnable tasks that are not ours (/proc/loadavg).  ks_load_step turns
 *    them into "spin" or "sleep at once".  The decision outlives the team: a
 *    process-wide copy carries it to the next solve (-b 1 and -v run
 *    hundreds of short solves).
 *
 * Posting a job is a sequence lock on `gen`: odd while the master writes the
 * job, even once it is posted.  A worker reads the job, then checks that
 * `gen` did not move; a chunk is claimed by raising its slot to the job's
 * generation (compare-and-swap), so master and worker cannot both run it,
 * and a worker can only claim a chunk of a job that is not finished (the job
 * cannot finish with a chunk unclaimed), which keeps the job's fields valid
 * while it runs.  No lock is ever held, so a fork at any moment leaves the
 * child nothing to wait for (a child that goes on with its copy of a solve
 * finds no worker and runs every chunk itself).
 *
 * Linux only (futex, /proc); elsewhere ks_team_start returns NULL and the
 * solver keeps its OpenMP loops.  One owner: the SMO solver
 * (kernsolve/solvers/smo/_smo.pyx) starts and watches teams; the kernel
 * engine (_kernel.pyx) only posts row fills to the team SMO hands it.
 */
#ifndef KS_TEAM_H
#define KS_TEAM_H

#include <stddef.h>

#if defined(__linux__) && defined(__GNUC__)
#define KS_TEAM_OK 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KS_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define KS_PAUSE() __asm__ __volatile__("yield")
#else
#define KS_PAUSE() do { } while (0)
#endif

#if defined(__GNUC__)
#define KS_UNUSED __attribute__((unused))
#else
#define KS_UNUSED
#endif

typedef void (*ks_job_fn)(void* ctx, int c, int nc);

/* Most threads a team has (the solver's MAX_CHUNKS). */
#define KS_TEAM_MAX 64
/* Seconds between two load watches (the solver calls ks_team_watch). */
#define KS_TEAM_WATCH_SECONDS 0.02
/* The master spins this long for running chunks before it sleeps. */
#define KS_TEAM_JOIN_SPIN_NS 50000LL

/* ------------------------------------------------------- the load decision
 * Pure logic, no clock and no /proc, so the tests can drive it with made-up
 * evidence (kernsolve.solvers.smo._smo._load_decisions).
 *
 * Spinning: when, over one window, our threads waited for a CPU more than
 * KS_LOAD_SEVERE of their runnable time (3 runnable threads on 2 cores wait
 * a third), or more than KS_LOAD_BOUND in two windows running, workers
 * sleep at once from then on.  Sleeping: a trial of spinning starts once
 * the back-off has passed if a CPU is free for each of our threads (the
 * count of other runnable tasks says so, or is unknown), and after
 * KS_LOAD_BLIND seconds anyway (the other tasks may run at a lower
 * priority: then our threads hardly wait, and spinning pays).  A trial that
 * fails doubles the back-off (up to KS_LOAD_BACKOFF_MAX), one that stays
 * clean for KS_LOAD_CONFIRM windows resets it.  At a solve's start (no window
 * yet) the count drops a spin still on trial. */
#define KS_LOAD_BOUND 0.10
#define KS_LOAD_SEVERE 0.25
#define KS_LOAD_CONFIRM 2
#define KS_LOAD_BACKOFF_MIN 0.25
#define KS_LOAD_BACKOFF_MAX 8.0
#define KS_LOAD_BLIND 8.0

typedef struct {
    int spin;            /* 1: idle workers spin before they sleep; 0: sleep at once */
    int trial;           /* spinning, not yet confirmed by clean windows */
    int strikes;         /* windows in a row over KS_LOAD_BOUND */
    int clean;           /* clean windows of the trial */
    double since;        /* sleeping since this time (seconds) */
    double backoff;      /* seconds from a failed trial to the next one */
} ks_load;

static inline void ks_load_init(ks_load* s)
{
    s->spin = 1;
    s->trial = 1;
    s->strikes = 0;
    s->clean = 0;
    s->since = 0.0;
    s->backoff = KS_LOAD_BACKOFF_MIN;
}

/* One piece of evidence at time `now`: `wait` is the share of our threads'
 * runnable time spent waiting for a CPU over the last window (< 0: no window
 * measured), `others` the runnable tasks that are not ours (< 0: unknown),
 * `n` our threads, `cpus` the machine's.  Returns the spin decision. */
static inline int ks_load_step(ks_load* s, double now, double wait, int others,
                               int n, int cpus)
{
    int room = others < 0 || others + n <= cpus;
    int bad;
    if (!s->spin) {
        if (now - s->since >= (room ? s->backoff : KS_LOAD_BLIND)) {
            s->spin = 1;
            s->trial = 1;
            s->strikes = 0;
            s->clean = 0;
        }
        return s->spin;
    }
    if (wait < 0) {
        bad = !room && s->trial;
    } else if (wait > KS_LOAD_SEVERE) {
        bad = 1;
    } else if (wait > KS_LOAD_BOUND) {
        bad = ++s->strikes >= 2;
    } else {
        bad = 0;
        s->strikes = 0;
        if (s->trial && ++s->clean >= KS_LOAD_CONFIRM) {
            s->trial = 0;
            s->backoff = KS_LOAD_BACKOFF_MIN;
        }
    }
    if (bad) {
        if (s->trial) {
            s->backoff *= 2.0;
            if (s->backoff > KS_LOAD_BACKOFF_MAX)
                s->backoff = KS_LOAD_BACKOFF_MAX;
        }
        s->spin = 0;
        s->trial = 0;
        s->strikes = 0;
        s->clean = 0;
        s->since = now;
    }
    return s->spin;
}

/* The process-wide decision, handed from one team to the next.  A try-lock,
 * never waited for: a thread that finds it taken (another solve's team, or a
 * fork that copied it taken) starts from the initial state and keeps its own. */
static ks_load ks_load_shared KS_UNUSED;
static int ks_load_shared_set KS_UNUSED = 0;
static int ks_load_lock KS_UNUSED = 0;

#if defined(__GNUC__)
#define KS_TRY_LOCK(p) (__atomic_exchange_n((p), 1, __ATOMIC_ACQUIRE) == 0)
#define KS_UNLOCK(p) __atomic_store_n((p), 0, __ATOMIC_RELEASE)
#else   /* no team without GCC's atomics: one thread only */
#define KS_TRY_LOCK(p) 1
#define KS_UNLOCK(p) ((void)0)
#endif

static inline void ks_load_get(ks_load* s)
{
    ks_load_init(s);
    if (KS_TRY_LOCK(&ks_load_lock)) {
        if (ks_load_shared_set)
            *s = ks_load_shared;
        KS_UNLOCK(&ks_load_lock);
    }
}

static inline void ks_load_put(const ks_load* s)
{
    if (KS_TRY_LOCK(&ks_load_lock)) {
        ks_load_shared = *s;
        ks_load_shared_set = 1;
        KS_UNLOCK(&ks_load_lock);
    }
}

/* The remembered decision (spin, or -1 when none yet), for tests and benchmarks. */
static inline int ks_load_remembered(void)
{
    int spin = -1;
    if (KS_TRY_LOCK(&ks_load_lock)) {
        if (ks_load_shared_set)
            spin = ks_load_shared.spin;
        KS_UNLOCK(&ks_load_lock);
    }
    return spin;
}

/* Forget the remembered decision (tests). */
static inline void ks_load_forget(void)
{
    if (KS_TRY_LOCK(&ks_load_lock)) {
        ks_load_shared_set = 0;
        KS_UNLOCK(&ks_load_lock);
    }
}

#ifdef KS_TEAM_OK

typedef struct {
    unsigned v;
    char pad[64 - sizeof(unsigned)];
} ks_slot;

typedef struct ks_team ks_team;

typedef struct {
    ks_team* team;
    int index;                      /* the chunk it claims: 1..n-1 */
    int ready;                      /* fd is set */
    int fd;                         /* its /proc/thread-self/schedstat, -1: none */
    unsigned long long run, wait;   /* the watch's last reading */
    pthread_t thread;
} ks_worker;

struct ks_team {
    /* The posted job (the sequence lock): written by the master, read by
     * idle workers, which spin on gen. */
    unsigned gen __attribute__((aligned(64)));
    int nc;
    int stop;
    ks_job_fn fn;
    void* ctx;
    long long spin_ns;              /* how long an idle worker spins */
    int sleepers __attribute__((aligned(64)));   /* workers asleep on gen */
    unsigned done __attribute__((aligned(64)));  /* chunks workers finished */
    int master_waiting;             /* the master sleeps on done */
    ks_slot slot[KS_TEAM_MAX];      /* the generation that claimed chunk c */
    /* the master's own */
    int n;                          /* threads, the master included */
    int adaptive;                   /* watch the load */
    int cpus;
    pid_t pid;                      /* the process that started the workers */
    long long spin_setting;
    int fd, loadavg_fd;
    unsigned long long run, wait;
    ks_load load;
    ks_worker w[KS_TEAM_MAX];
};

/* Dynamic chunks inside a job: the first of `step` items not taken yet. */
static inline Py_ssize_t ks_grab(Py_ssize_t* next, Py_ssize_t step)
{
    return __atomic_fetch_add(next, step, __ATOMIC_RELAXED);
}

static inline long long ks_team_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void ks_futex_wait(unsigned* addr, unsigned val)
{
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static inline void ks_futex_wake(unsigned* addr, int count)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static inline int ks_team_claim(ks_team* t, int c, unsigned g)
{
    unsigned old = __atomic_load_n(&t->slot[c].v, __ATOMIC_RELAXED);
    while ((int)(old - g) < 0) {
        if (__atomic_compare_exchange_n(&t->slot[c].v, &old, g, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

/* An idle worker: the next posted generation after `seen`. */
static KS_UNUSED unsigned ks_team_next(ks_team* t, unsigned seen)
{
    unsigned g, k;
    long long limit, t0;
    for (;;) {
        limit = __atomic_load_n(&t->spin_ns, __ATOMIC_RELAXED);
        if (limit > 0) {
            t0 = ks_team_ns();
            for (k = 1;; k++) {
                g = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
                if (g != seen && !(g & 1))
                    return g;
                KS_PAUSE();
                if ((k & 63) == 0 && ks_team_ns() - t0 > limit)
                    break;
            }
        }
        /* Dekker with the master's post: sleepers up, then gen read; the
         * master writes gen, then reads sleepers; one sees the other. */
        __atomic_add_fetch(&t->sleepers, 1, __ATOMIC_SEQ_CST);
        g = __atomic_load_n(&t->gen, __ATOMIC_SEQ_CST);
        if (g == seen || (g & 1))
            ks_futex_wait(&t->gen, g);
        __atomic_sub_fetch(&t->sleepers, 1, __ATOMIC_SEQ_CST);
        g = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
        if (g != seen && !(g & 1))
            return g;
    }
}

#define KS_TEAM_THREAD_NAME "kernsolve-team"   /* at most 15 characters */

static KS_UNUSED void* ks_team_main(void* arg)
{
    ks_worker* me = (ks_worker*)arg;
    ks_team* t = me->team;
    unsigned seen = 0, g;
    int nc, stop;
    ks_job_fn fn;
    void* ctx;
    me->fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    __atomic_store_n(&me->ready, 1, __ATOMIC_RELEASE);
    for (;;) {
        g = ks_team_next(t, seen);
        nc = __atomic_load_n(&t->nc, __ATOMIC_RELAXED);
        stop = __atomic_load_n(&t->stop, __ATOMIC_RELAXED);
        fn = __atomic_load_n(&t->fn, __ATOMIC_RELAXED);
        ctx = __atomic_load_n(&t->ctx, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&t->gen, __ATOMIC_RELAXED) != g)
            continue;                   /* the master is writing the next job */
        seen = g;
        if (stop)
            break;
        if (me->index >= nc || !ks_team_claim(t, me->index, g))
            continue;                   /* not ours, or the master took it */
        fn(ctx, me->index, nc);
        __atomic_add_fetch(&t->done, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&t->master_waiting, __ATOMIC_SEQ_CST))
            ks_futex_wake(&t->done, 1);
    }
    return NULL;
}

/* Post a job (or the stop); returns its generation. */
static inline unsigned ks_team_post(ks_team* t, ks_job_fn fn, void* ctx, int nc, int stop)
{
    unsigned g = t->gen + 2;
    __atomic_store_n(&t->gen, g - 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&t->fn, fn, __ATOMIC_RELAXED);
    __atomic_store_n(&t->ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&t->nc, nc, __ATOMIC_RELAXED);
    __atomic_store_n(&t->stop, stop, __ATOMIC_RELAXED);
    __atomic_store_n(&t->done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->gen, g, __ATOMIC_SEQ_CST);
    if (stop || __atomic_load_n(&t->sleepers, __ATOMIC_SEQ_CST) > 0)
        ks_futex_wake(&t->gen, INT_MAX);
    return g;
}

/* Run chunks 0..nc-1 of fn(ctx, c, nc) on the team; returns when all are done. */
static inline void ks_team_run(ks_team* t, ks_job_fn fn, void* ctx, int nc)
{
    unsigned g, expect, k = 0;
    int c, mine = 1;
    long long t0 = 0, limit;
    if (nc <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    g = ks_team_post(t, fn, ctx, nc, 0);
    fn(ctx, 0, nc);
    for (c = 1; c < nc; c++) {
        /* chunks past the team's size have no worker: the master's */
        if (c >= t->n || ks_team_claim(t, c, g)) {
            fn(ctx, c, nc);
            mine++;
        }
    }
    expect = (unsigned)(nc - mine);
    limit = t->spin_ns > KS_TEAM_JOIN_SPIN_NS ? t->spin_ns : KS_TEAM_JOIN_SPIN_NS;
    while (__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) != expect) {
        KS_PAUSE();
        if ((++k & 63) != 0)
            continue;
        if (t0 == 0) {
            t0 = ks_team_ns();
        } else if (ks_team_ns() - t0 > limit) {
            unsigned d;
            __atomic_store_n(&t->master_waiting, 1, __ATOMIC_SEQ_CST);
            d = __atomic_load_n(&t->done, __ATOMIC_SEQ_CST);
            if (d != expect)
                ks_futex_wait(&t->done, d);
            __atomic_store_n(&t->master_waiting, 0, __ATOMIC_SEQ_CST);
        }
    }
}

/* run and wait seconds (nanoseconds) of a thread so far, from its schedstat. */
static inline int ks_schedstat(int fd, unsigned long long* run, unsigned long long* wait)
{
    char buf[96];
    char* end;
    ssize_t m;
    if (fd < 0)
        return 0;
    m = pread(fd, buf, sizeof buf - 1, 0);
    if (m <= 0)
        return 0;
    buf[m] = 0;
    *run = strtoull(buf, &end, 10);
    if (end == buf)
        return 0;
    *wait = strtoull(end, NULL, 10);
    return 1;
}

/* Runnable tasks on the machine (the fourth field of /proc/loadavg), -1 unknown. */
static inline int ks_nr_running(int fd)
{
    char buf[128];
    char* p;
    ssize_t m;
    int fields = 0;
    if (fd < 0)
        return -1;
    m = pread(fd, buf, sizeof buf - 1, 0);
    if (m <= 0)
        return -1;
    buf[m] = 0;
    for (p = buf; *p && fields < 3; p++)
        if (*p == ' ')
            fields++;
    if (fields < 3 || *p < '0' || *p > '9')
        return -1;
    return (int)strtol(p, NULL, 10);
}

static inline double ks_team_seconds(void)
{
    return 1e-9 * (double)ks_team_ns();
}

/* Runnable tasks that are not this team's, -1 unknown. */
static inline int ks_team_others(ks_team* t)
{
    int nr = ks_nr_running(t->loadavg_fd), ours;
    if (nr < 0)
        return -1;
    ours = t->n - __atomic_load_n(&t->sleepers, __ATOMIC_RELAXED);
    return nr > ours ? nr - ours : 0;
}

static inline void ks_team_apply(ks_team* t)
{
    __atomic_store_n(&t->spin_ns, t->load.spin ? t->spin_setting : 0, __ATOMIC_RELAXED);
}

static inline void ks_team_stop(ks_team* t);

/* A team of n threads (the caller and n - 1 workers) for one solve, or NULL
 * (n < 2, no memory, no thread, not Linux).  spin_ns: how long idle workers
 * spin; adaptive: watch the load (else they always spin spin_ns). */
static inline ks_team* ks_team_start(int n, long long spin_ns, int adaptive)
{
    ks_team* t;
    sigset_t all, old;
    int i, started = 1;
    unsigned long long r, w;
    if (n < 2)
        return NULL;
    if (n > KS_TEAM_MAX)
        n = KS_TEAM_MAX;
    if (posix_memalign((void**)&t, 64, sizeof *t) != 0)
        return NULL;
    memset(t, 0, sizeof *t);
    t->n = n;
    t->pid = getpid();
    t->adaptive = adaptive;
    t->spin_setting = spin_ns > 0 ? spin_ns : 0;
    t->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (t->cpus < 1)
        t->cpus = 1;
    t->fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    t->loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    ks_load_get(&t->load);
    if (adaptive) {
        if (ks_schedstat(t->fd, &r, &w)) {
            t->run = r;
            t->wait = w;
            ks_load_step(&t->load, ks_team_seconds(), -1.0, ks_team_others(t), n, t->cpus);
        } else {
            t->load.spin = 0;       /* blind: never spin */
            t->adaptive = 0;
        }
    } else {
        t->load.spin = 1;
    }
    ks_team_apply(t);
    for (i = 1; i < n; i++) {
        t->w[i].team = t;
        t->w[i].index = i;
        t->w[i].fd = -1;
    }
    /* Workers block every signal: Ctrl-C stays with the Python thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (i = 1; i < n; i++) {
        if (pthread_create(&t->w[i].thread, NULL, ks_team_main, &t->w[i]) != 0)
            break;
        /* a name of its own from birth, so that a count of the team's threads
           (tests, ps -L) is not a count of whatever else the process runs */
        pthread_setname_np(t->w[i].thread, KS_TEAM_THREAD_NAME);
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    t->n = started;
    if (started < 2) {
        ks_team_stop(t);
        return NULL;
    }
    return t;
}

/* Stop and join the workers, remember the load decision, free the team. */
static inline void ks_team_stop(ks_team* t)
{
    int i;
    if (t == NULL)
        return;
    if (t->pid == getpid()) {
        if (t->n > 1)
            ks_team_post(t, NULL, NULL, 0, 1);
        for (i = 1; i < t->n; i++) {
            pthread_join(t->w[i].thread, NULL);
            if (t->w[i].fd >= 0)
                close(t->w[i].fd);
        }
        if (t->adaptive)
            ks_load_put(&t->load);
    }
    /* else: a forked child's copy; its workers do not exist here */
    if (t->fd >= 0)
        close(t->fd);
    if (t->loadavg_fd >= 0)
        close(t->loadavg_fd);
    free(t);
}

/* The load watch, at time now (seconds, ks_team_seconds' clock): returns 1
 * when the spin decision changed. */
static inline int ks_team_watch(ks_team* t, double now)
{
    unsigned long long run = 0, wait = 0, r, w;
    double share = -1.0;
    int i, was;
    if (!t->adaptive)
        return 0;
    if (ks_schedstat(t->fd, &r, &w)) {
        run += r - t->run;
        wait += w - t->wait;
        t->run = r;
        t->wait = w;
    }
    for (i = 1; i < t->n; i++) {
        ks_worker* k = &t->w[i];
        if (__atomic_load_n(&k->ready, __ATOMIC_ACQUIRE) && ks_schedstat(k->fd, &r, &w)) {
            run += r - k->run;
            wait += w - k->wait;
            k->run = r;
            k->wait = w;
        }
    }
    if (run + wait > 1000000ULL)        /* at least 1 ms runnable */
        share = (double)wait / (double)(run + wait);
    was = t->load.spin;
    ks_load_step(&t->load, now, share, ks_team_others(t), t->n, t->cpus);
    ks_team_apply(t);
    return t->load.spin != was;
}

static inline int ks_team_spinning(const ks_team* t)
{
    return t->load.spin;
}

static inline int ks_team_size(const ks_team* t)
{
    return t->n;
}

#else   /* no team here: the solver keeps OpenMP */

typedef struct ks_team { int n; } ks_team;

static inline Py_ssize_t ks_grab(Py_ssize_t* next, Py_ssize_t step)
{
    Py_ssize_t first = *next;
    *next += step;
    return first;
}
static inline ks_team* ks_team_start(int n, long long spin_ns, int adaptive)
{
    (void)n; (void)spin_ns; (void)adaptive;
    return NULL;
}
static inline void ks_team_stop(ks_team* t) { (void)t; }
static inline void ks_team_run(ks_team* t, ks_job_fn fn, void* ctx, int nc)
{
    int c;
    (void)t;
    for (c = 0; c < nc; c++)
        fn(ctx, c, nc);
}
static inline int ks_team_watch(ks_team* t, double now) { (void)t; (void)now; return 0; }
static inline int ks_team_spinning(const ks_team* t) { (void)t; return 0; }
static inline int ks_team_size(const ks_team* t) { (void)t; return 1; }
static inline double ks_team_seconds(void) { return 0.0; }

#endif
#endif
