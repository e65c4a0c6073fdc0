// oxla's HIP host shim: runs a HIP kernel's C++ source on the CPU (oxla_kernels.hip_host).
// The grid's blocks run one after another; a block's threads are POSIX threads that
// meet at __syncthreads() (a barrier), so shared memory is one buffer per block.
// Covered: threadIdx/blockIdx/blockDim/gridDim (and the hipThreadIdx_x... forms),
// __global__/__device__/__host__/__forceinline__, static and dynamic __shared__ arrays,
// __syncthreads, atomicAdd on int/float, and the float math kernels commonly use
// (rsqrtf, __fdividef, __frcp_rn, glibc's __expf/__logf, fminf/fmaxf, min/max). Anything else
// (warp intrinsics such as __shfl*, __ballot, textures, cooperative groups) is a
// compile error: the kernel then cannot run on the simulated device.
#pragma once
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <algorithm>

struct dim3 {
  unsigned x, y, z;
};
extern "C" {
extern __thread dim3 oxla_thread_idx;
extern dim3 oxla_block_idx, oxla_block_dim, oxla_grid_dim;
void oxla_syncthreads(void);
void* oxla_shared_base(void);
}
#define threadIdx oxla_thread_idx
#define blockIdx oxla_block_idx
#define blockDim oxla_block_dim
#define gridDim oxla_grid_dim
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static  // blocks run one at a time: one buffer per block
#define __syncthreads() oxla_syncthreads()
#define __restrict__ __restrict

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
using std::max;
using std::min;

static inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline float atomicAdd(float* p, float v) {
  float old = *p, want;
  do {
    want = old + v;
  } while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST));
  return old;
}

#ifdef OXLA_HIP_HOST_RUNTIME
extern "C" {
__thread dim3 oxla_thread_idx;
dim3 oxla_block_idx, oxla_block_dim, oxla_grid_dim;
static pthread_barrier_t oxla_barrier;
static unsigned char* oxla_dynamic_shared;
void oxla_syncthreads(void) { pthread_barrier_wait(&oxla_barrier); }
void* oxla_shared_base(void) { return oxla_dynamic_shared; }
}

struct oxla_thread_arg {
  void (*body)(void**);
  void** args;
  dim3 tid;
};

static void* oxla_thread_main(void* p) {
  oxla_thread_arg* a = (oxla_thread_arg*)p;
  oxla_thread_idx = a->tid;
  a->body(a->args);
  return nullptr;
}

// Runs body(args) for every thread of every block; returns 0, or -1 when a thread
// could not be started.
static int oxla_run_grid(void (*body)(void**), void** args, unsigned gx, unsigned gy,
                         unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         size_t shared_bytes) {
  unsigned n = bx * by * bz;
  oxla_grid_dim = dim3{gx, gy, gz};
  oxla_block_dim = dim3{bx, by, bz};
  unsigned char* shared = new unsigned char[shared_bytes + 16]();
  oxla_dynamic_shared = shared;
  pthread_t* threads = new pthread_t[n];
  oxla_thread_arg* targs = new oxla_thread_arg[n];
  int rc = 0;
  for (unsigned z = 0; z < gz && rc == 0; z++)
    for (unsigned y = 0; y < gy && rc == 0; y++)
      for (unsigned x = 0; x < gx && rc == 0; x++) {
        oxla_block_idx = dim3{x, y, z};
        pthread_barrier_init(&oxla_barrier, nullptr, n);
        unsigned started = 0;
        for (unsigned i = 0; i < n; i++) {
          targs[i] = oxla_thread_arg{body, args, dim3{i % bx, (i / bx) % by, i / (bx * by)}};
          if (pthread_create(&threads[i], nullptr, oxla_thread_main, &targs[i]) != 0) {
            rc = -1;  // the started ones would wait at a barrier forever: give up
            break;
          }
          started++;
        }
        for (unsigned i = 0; i < started && rc == 0; i++) pthread_join(threads[i], nullptr);
        pthread_barrier_destroy(&oxla_barrier);
      }
  delete[] targs;
  delete[] threads;
  delete[] shared;
  return rc;
}
#endif
