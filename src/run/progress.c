/* progress.c - rank 0 notices a rank that stopped making progress. Every rank tells rank 0
 * (a small non-blocking message on a communicator of its own) when it starts a case and
 * when it has no case left; rank 0 reads these reports whenever it polls: before each of
 * its own cases and while it waits for the other ranks inside the output module (the
 * output's idle hook). A rank that has run one case for longer than [run] stall_timeout
 * plus twice the case's estimated time is named with its host, device and case; with
 * on_stall = wait (default) the warning is repeated every stall_timeout and the job goes on
 * waiting, with on_stall = abort the job ends through the fatal path (exit 3). Rank 0 only
 * sees this between its own cases: a stall is reported at the latest when rank 0's
 * current case ends. */
#include "run/progress.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/timing.h"

#define MAX_PENDING 64
#define NOT_STARTED (KV_PROGRESS_IDLE - 1) /* rank 0's view of a rank before its first report */

typedef struct {
  double since;       /* kv_wtime of the last report */
  double warned;      /* kv_wtime of the last warning, 0: none */
  long long current;  /* plan case it is running, KV_PROGRESS_IDLE when done, NOT_STARTED */
} rank_state;

static struct {
  int active, rank, nranks;
  MPI_Comm comm;
  const kv_plan *plan;
  const kv_rank_info *infos; /* rank 0: every rank's identity */
  rank_state *ranks;         /* rank 0 */
  long long sent;            /* last value this rank reported */
  long long buf[MAX_PENDING];
  MPI_Request req[MAX_PENDING];
  int n_pending;
  int wait_at_idle;   /* rank 0 waits for the others once it has no case left */
  void (*waiting)(void);
  /* rank 0's watchdog thread; the mutex guards ranks[], polled, own_case and dog_warned */
  pthread_t watchdog;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int watching, quit;
  double polled, dog_warned;
  long long own_case;
} pg;

static void watchdog_check(double now);

static void *watchdog_main(void *unused) {
  (void)unused;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* SIGINT/SIGTERM stay with the main thread */
  pthread_mutex_lock(&pg.lock);
  while (!pg.quit) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&pg.wake, &pg.lock, &until);
    if (!pg.quit) watchdog_check(kv_wtime());
  }
  pthread_mutex_unlock(&pg.lock);
  return NULL;
}

void kv_progress_begin(const kv_plan *p, const kv_rank_info *infos, MPI_Comm comm, int wait_at_idle,
                       void (*waiting)(void)) {
  memset(&pg, 0, sizeof pg);
  pg.wait_at_idle = wait_at_idle;
  pg.waiting = waiting;
  if (CHECK_MPI(MPI_Comm_dup(comm, &pg.comm)) || CHECK_MPI(MPI_Comm_rank(pg.comm, &pg.rank)) ||
      CHECK_MPI(MPI_Comm_size(pg.comm, &pg.nranks)))
    KV_FATAL("cannot set up the progress reports");
  pg.plan = p;
  pg.infos = infos;
  pg.sent = NOT_STARTED;
  if (pg.rank == 0) {
    pg.ranks = KV_CALLOC((size_t)pg.nranks, sizeof *pg.ranks);
    if (!pg.ranks) KV_FATAL("out of memory");
    double now = kv_wtime();
    for (int r = 0; r < pg.nranks; r++) pg.ranks[r] = (rank_state){now, 0, NOT_STARTED};
    pg.polled = now;
    pg.own_case = NOT_STARTED;
    pthread_mutex_init(&pg.lock, NULL);
    pthread_cond_init(&pg.wake, NULL);
    pg.watching = p->run.stall_timeout > 0 && pg.nranks > 1 &&
                  pthread_create(&pg.watchdog, NULL, watchdog_main, NULL) == 0;
  }
  pg.active = 1;
}

/* Rank 0: a rank that has run its case for too long is named (or the job aborted). */
static void check_deadlines(void) {
  const kv_run_settings *rs = &pg.plan->run;
  double now = kv_wtime();
  for (int r = 1; rs->stall_timeout > 0 && r < pg.nranks; r++) {
    rank_state *s = &pg.ranks[r];
    if (s->current == KV_PROGRESS_IDLE) continue;
    const kv_case *c = s->current >= 0 ? &pg.plan->cases[s->current] : NULL;
    double silent = now - s->since, allowed = rs->stall_timeout + (c ? 2.0 * c->est_seconds : 0.0);
    if (silent < allowed || (s->warned && now - s->warned < rs->stall_timeout)) continue;
    s->warned = now;
    char what[256] = "", msg[1024];
    if (c) kv_case_describe(c, what, sizeof what);
    const kv_rank_info *in = &pg.infos[r];
    if (c)
      snprintf(msg, sizeof msg, "rank %d (host %s, device %s, %s) has not reported progress for %.0f s: it is still in case "
               "%lld, %s (estimated %.3g s)", r, in->host, in->device_name, in->uuid, silent, s->current, what,
               c->est_seconds);
    else
      snprintf(msg, sizeof msg, "rank %d (host %s, device %s, %s) has not reported progress for %.0f s: it has not started "
               "its first case", r, in->host, in->device_name, in->uuid, silent);
    if (rs->stall_abort) {
      pthread_mutex_unlock(&pg.lock);
      KV_FATAL("%s; [run] on_stall = abort: ending the job", msg);
    }
    fprintf(stderr, "kval: warning: %s; waiting for it ([run] on_stall = wait; stall_timeout = %g s)\n", msg,
            rs->stall_timeout);
    fflush(stderr);
  }
}

/* Watchdog thread, lock held: rank 0 has not polled for longer than the deadline of its own
 * case: it is stuck waiting for a rank that has stopped (or in a case far slower than its
 * estimate). The ranks that have not finished are named. */
static void watchdog_check(double now) {
  const kv_run_settings *rs = &pg.plan->run;
  const kv_case *own = pg.own_case >= 0 ? &pg.plan->cases[pg.own_case] : NULL;
  double stuck = now - pg.polled, allowed = rs->stall_timeout + (own ? 2.0 * own->est_seconds : 0.0);
  if (stuck < allowed || (pg.dog_warned && now - pg.dog_warned < rs->stall_timeout)) return;
  pg.dog_warned = now;
  char who[2048] = "";
  int n = 0;
  for (int r = 1; r < pg.nranks; r++) {
    const rank_state *s = &pg.ranks[r];
    if (s->current == KV_PROGRESS_IDLE) continue;
    size_t len = strlen(who);
    if (len + 200 < sizeof who)
      snprintf(who + len, sizeof who - len, "%srank %d (host %s, device %s, %s, last report %.0f s ago: %s %lld)",
               n ? "; " : "", r, pg.infos[r].host, pg.infos[r].device_name, pg.infos[r].uuid, now - s->since,
               s->current >= 0 ? "case" : "before its first case", s->current >= 0 ? s->current : 0LL);
    n++;
  }
  fprintf(stderr, "kval: warning: rank 0 has waited %.0f s inside a step every rank takes together (a collective "
          "write) without getting back to check on the others: a rank has stopped; %s %s%s\n", stuck,
          n == 1 ? "it is" : "it is one of", n ? who : "(every rank reported its last case done)",
          rs->stall_abort ? "; [run] on_stall = abort: ending the job (exit 3)" : "; waiting for it ([run] on_stall = wait)");
  fflush(stderr);
  if (rs->stall_abort) _exit(KV_EXIT_RUNTIME); /* no MPI call from this thread: mpirun ends the others */
}

void kv_progress_poll(void) {
  if (!pg.active || pg.rank != 0) return;
  pthread_mutex_lock(&pg.lock);
  pg.polled = kv_wtime();
  pg.dog_warned = 0;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 0, pg.comm, &flag, &st))) KV_FATAL("progress reports failed");
    if (!flag) break;
    long long v;
    if (CHECK_MPI(MPI_Recv(&v, 1, MPI_LONG_LONG, st.MPI_SOURCE, 0, pg.comm, MPI_STATUS_IGNORE)))
      KV_FATAL("progress reports failed");
    rank_state *s = &pg.ranks[st.MPI_SOURCE];
    if (s->warned)
      fprintf(stderr, "kval: rank %d reports progress again after %.0f s\n", st.MPI_SOURCE, kv_wtime() - s->since);
    *s = (rank_state){kv_wtime(), 0, v};
  }
  check_deadlines();
  pthread_mutex_unlock(&pg.lock);
}

/* Reclaim completed sends; with every slot busy, wait for the oldest. */
static void reclaim(int need_slot) {
  for (int i = 0; i < pg.n_pending;) {
    int done = 0;
    if (CHECK_MPI(MPI_Test(&pg.req[i], &done, MPI_STATUS_IGNORE))) KV_FATAL("progress reports failed");
    if (!done && !(need_slot && i == 0 && pg.n_pending == MAX_PENDING)) {
      i++;
      continue;
    }
    if (!done && CHECK_MPI(MPI_Wait(&pg.req[i], MPI_STATUS_IGNORE))) KV_FATAL("progress reports failed");
    pg.n_pending--;
    memmove(&pg.req[i], &pg.req[i + 1], (size_t)(pg.n_pending - i) * sizeof pg.req[0]);
    memmove(&pg.buf[i], &pg.buf[i + 1], (size_t)(pg.n_pending - i) * sizeof pg.buf[0]);
  }
}

void kv_progress_case(long long ci) {
  if (!pg.active || ci == pg.sent) return;
  pg.sent = ci;
  if (pg.rank == 0) {
    pthread_mutex_lock(&pg.lock);
    pg.own_case = ci;
    pthread_mutex_unlock(&pg.lock);
    kv_progress_poll();
    for (int r = 1; pg.wait_at_idle && ci == KV_PROGRESS_IDLE && r < pg.nranks; r++) {
      const struct timespec pause = {0, 1000000};
      while (pg.ranks[r].current != KV_PROGRESS_IDLE) {
        if (pg.waiting) pg.waiting();
        nanosleep(&pause, NULL);
        kv_progress_poll();
      }
    }
    return;
  }
  reclaim(1);
  int i = pg.n_pending;
  pg.buf[i] = ci;
  if (CHECK_MPI(MPI_Isend(&pg.buf[i], 1, MPI_LONG_LONG, 0, 0, pg.comm, &pg.req[i])))
    KV_FATAL("progress reports failed");
  pg.n_pending++;
}

void kv_progress_end(void) {
  if (!pg.active) return;
  /* Every report reaches rank 0 before the communicator goes: the others wait for their
   * sends, rank 0 reads until each rank has said it is idle (its last report). */
  kv_progress_case(KV_PROGRESS_IDLE);
  if (pg.rank != 0) {
    if (pg.n_pending && CHECK_MPI(MPI_Waitall(pg.n_pending, pg.req, MPI_STATUSES_IGNORE)))
      KV_FATAL("progress reports failed");
  } else {
    for (int r = 1; r < pg.nranks; r++) {
      while (pg.ranks[r].current != KV_PROGRESS_IDLE) {
        long long v;
        MPI_Status st;
        if (CHECK_MPI(MPI_Recv(&v, 1, MPI_LONG_LONG, r, 0, pg.comm, &st))) KV_FATAL("progress reports failed");
        pg.ranks[r].current = v;
      }
    }
    if (pg.watching) {
      pthread_mutex_lock(&pg.lock);
      pg.quit = 1;
      pthread_cond_signal(&pg.wake);
      pthread_mutex_unlock(&pg.lock);
      pthread_join(pg.watchdog, NULL);
    }
    pthread_cond_destroy(&pg.wake);
    pthread_mutex_destroy(&pg.lock);
    free(pg.ranks);
  }
  pg.active = 0;
  CHECK_MPI(MPI_Comm_free(&pg.comm));
}
