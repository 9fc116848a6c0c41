/* One MuJoCo-C step for each of many worlds, on threads that each own ONE model and patch it per world.
 *
 * redline.physics.worlds compiles this file with the system C compiler against the headers and the library of the
 * installed mujoco wheel. mujoco.rollout takes one mjModel per world: with per-world randomised parameters that is
 * one ~50 KB model per world, read once per physics step, and the cache misses cost 1.4-1.8x the step (docs/
 * physics_cpu.md). Here each thread keeps one model copy and, before stepping a world, copies in only the bytes
 * that differ between worlds (a mass, an inertia, a friction: a few hundred bytes), so the model stays in cache.
 *
 * A world's step is the one mujoco.rollout takes for nstep = 1 with a zero warm start: set the full physics state,
 * zero qacc_warmstart and the warning counters, set the controls, mj_step, read the full physics state and the
 * sensor data. Given the same model values the result is bitwise the same (tests/physics/test_worlds.py).
 */
#include <mujoco/mujoco.h>
#include <pthread.h>
#include <string.h>

typedef struct {
  int nworld, nthread, nfield;
  unsigned int control_spec;
  int nstate, ncontrol, nsensor;
  mjModel** models;          /* [nthread] one model per thread */
  mjData** datas;            /* [nthread] scratch data per thread */
  unsigned char** dst;       /* [nthread * nfield] where field f lies in thread t's model */
  const unsigned char** src; /* [nfield] (nworld, size[f]) bytes: every world's values of field f */
  const long* size;          /* [nfield] bytes of field f per world */
  const double* state0;      /* (nworld, nstate) */
  const double* control;     /* (nworld, ncontrol) */
  double* state;             /* (nworld, nstate) out */
  double* sensordata;        /* (nworld, nsensor) out, or NULL */
} Batch;

typedef struct {
  const Batch* batch;
  int thread, begin, end;
} Chunk;

static void step_chunk(const Chunk* c) {
  const Batch* b = c->batch;
  mjModel* m = b->models[c->thread];
  mjData* d = b->datas[c->thread];
  for (int w = c->begin; w < c->end; w++) {
    for (int f = 0; f < b->nfield; f++) {
      memcpy(b->dst[c->thread * b->nfield + f], b->src[f] + (long)w * b->size[f], (size_t)b->size[f]);
    }
    mj_setState(m, d, b->state0 + (long)w * b->nstate, mjSTATE_FULLPHYSICS);
    mju_zero(d->qacc_warmstart, m->nv); /* every solve starts cold, as rollout with a zero warm start */
    for (int i = 0; i < mjNWARNING; i++) {
      d->warning[i].number = 0;
    }
    mj_setState(m, d, b->control + (long)w * b->ncontrol, b->control_spec);
    mj_step(m, d);
    mj_getState(m, d, b->state + (long)w * b->nstate, mjSTATE_FULLPHYSICS);
    if (b->sensordata) {
      memcpy(b->sensordata + (long)w * b->nsensor, d->sensordata, sizeof(double) * (size_t)b->nsensor);
    }
  }
}

static void* run_chunk(void* arg) {
  step_chunk((const Chunk*)arg);
  return NULL;
}

/* Step worlds [0, nworld) in nthread contiguous chunks, chunk 0 on the calling thread. Returns 0, or -1 when a
 * thread could not be started (the caller then raises). */
int redline_step_worlds(int nworld, int nthread, int nfield, unsigned int control_spec, int nstate, int ncontrol,
                        int nsensor, mjModel** models, mjData** datas, unsigned char** dst,
                        const unsigned char** src, const long* size, const double* state0, const double* control,
                        double* state, double* sensordata) {
  Batch b = {nworld, nthread, nfield, control_spec, nstate, ncontrol, nsensor, models, datas, dst, src, size,
             state0, control, state, sensordata};
  Chunk chunks[64];
  pthread_t threads[64];
  if (nthread < 1 || nthread > 64) {
    return -1;
  }
  for (int t = 0; t < nthread; t++) {
    chunks[t].batch = &b;
    chunks[t].thread = t;
    chunks[t].begin = (int)((long)nworld * t / nthread);
    chunks[t].end = (int)((long)nworld * (t + 1) / nthread);
  }
  int started = 1;
  int failed = 0;
  for (int t = 1; t < nthread; t++) {
    if (pthread_create(&threads[t], NULL, run_chunk, &chunks[t]) != 0) {
      failed = 1;
      break;
    }
    started++;
  }
  if (!failed) {
    step_chunk(&chunks[0]);
  }
  for (int t = 1; t < started; t++) {
    pthread_join(threads[t], NULL);
  }
  return failed ? -1 : 0;
}
