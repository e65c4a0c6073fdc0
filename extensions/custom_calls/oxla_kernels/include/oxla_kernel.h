/* oxla_kernel.h: reading a kernel's shapes and attributes on the cpu backend.
 *
 * A kernel declared with oxla_kernels.Kernel and implemented in C (CImpl) is called
 * with XLA's cpu convention
 *
 *     void fn(void** outputs, const void** inputs, const char* cfg, size_t cfg_len);
 *
 * where cfg is the op's backend_config, written by the SDK as "key=value;" pairs:
 * each operand's and result's shape ("in0=4x64", "out0=4x64"; "" for a scalar) and
 * each attribute ("eps=1e-06", "axes=0,1", "name=text"). These inline helpers read it.
 */
#ifndef OXLA_KERNEL_H
#define OXLA_KERNEL_H
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The value of key in cfg (NULL when absent); *len receives its length. */
static inline const char* oxla_cfg_find(const char* cfg, size_t n, const char* key,
                                        size_t* len) {
  size_t k = strlen(key), i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && cfg[j] != ';') j++;
    if (j - i > k && cfg[i + k] == '=' && memcmp(cfg + i, key, k) == 0) {
      if (len) *len = j - i - k - 1;
      return cfg + i + k + 1;
    }
    i = j + 1;
  }
  return NULL;
}

static inline double oxla_attr_f64(const char* cfg, size_t n, const char* key, double dflt) {
  const char* v = oxla_cfg_find(cfg, n, key, NULL);
  return v ? strtod(v, NULL) : dflt;
}

static inline long long oxla_attr_i64(const char* cfg, size_t n, const char* key,
                                      long long dflt) {
  const char* v = oxla_cfg_find(cfg, n, key, NULL);
  return v ? strtoll(v, NULL, 10) : dflt;
}

/* Rank of "in0"/"out0"... (-1 when absent). */
static inline int oxla_rank(const char* cfg, size_t n, const char* which) {
  size_t len;
  const char* v = oxla_cfg_find(cfg, n, which, &len);
  if (!v) return -1;
  if (len == 0) return 0;
  int r = 1;
  for (size_t i = 0; i < len; i++) r += v[i] == 'x';
  return r;
}

/* Size of dimension d of "in0"/"out0"... (d < 0 counts from the end; -1 when absent). */
static inline long long oxla_dim(const char* cfg, size_t n, const char* which, int d) {
  size_t len;
  const char* v = oxla_cfg_find(cfg, n, which, &len);
  int r = oxla_rank(cfg, n, which);
  if (!v || r <= 0) return -1;
  if (d < 0) d += r;
  if (d < 0 || d >= r) return -1;
  const char* p = v;
  for (int i = 0; i < d; i++) p = strchr(p, 'x') + 1;
  return strtoll(p, NULL, 10);
}

/* Number of elements of "in0"/"out0"... (1 for a scalar, -1 when absent). */
static inline long long oxla_numel(const char* cfg, size_t n, const char* which) {
  int r = oxla_rank(cfg, n, which);
  long long e = 1;
  if (r < 0) return -1;
  for (int d = 0; d < r; d++) e *= oxla_dim(cfg, n, which, d);
  return e;
}
#endif
