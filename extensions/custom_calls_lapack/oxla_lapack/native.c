/* oxla-lapack's compiled kernels: XLA FFI handlers (xla/ffi/api/c_api.h) for jaxlib's
 * LAPACK targets on the hot paths (getrf, trsm, potrf, geqrf, orgqr/ungqr, syevd/heevd,
 * gesdd), one handler per kind for the four dtypes, the batch loop here.
 *
 * Buffers are oxla's: dense row-major logical values (the call site's column-major
 * layouts are not applied), so a matrix is transposed into a column-major scratch copy
 * before LAPACK and back after, except where a transposed problem is the same problem
 * (trsm, potrf: see the handlers). The LAPACK/BLAS routines are scipy's
 * (scipy.linalg.cython_lapack/cython_blas function pointers, Fortran convention),
 * bound by name with oxla_lapack_bind before any call. See oxla_lapack/native.py. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "xla/ffi/api/c_api.h"

enum { GETRF, TRSM, POTRF, GEQRF, ORGQR, SYEVD, GESDD, NKINDS };
static void* FN[4][NKINDS]; /* [s, d, c, z][kind] */
static int (*set_threads)(int);
static double threads_flops = 33554432.0; /* one OpenBLAS thread below this */

int oxla_lapack_nkinds(void) { return NKINDS; }

/* Binds routine `kind` of precision `prefix` (0-3: s d c z) to `fn`. */
void oxla_lapack_bind(int prefix, int kind, void* fn) { FN[prefix][kind] = fn; }

/* openblas_set_num_threads_local (NULL: leave OpenBLAS's threads alone). */
void oxla_lapack_bind_threads(void* fn, double flops) {
  set_threads = (int (*)(int))fn;
  threads_flops = flops;
}

typedef void (*getrf_t)(int*, int*, void*, int*, int*, int*);
typedef void (*trsm_t)(char*, char*, char*, char*, int*, int*, void*, void*, int*, void*,
                       int*);
typedef void (*potrf_t)(char*, int*, void*, int*, int*);
typedef void (*geqrf_t)(int*, int*, void*, int*, void*, void*, int*, int*);
typedef void (*orgqr_t)(int*, int*, int*, void*, int*, void*, void*, int*, int*);
typedef void (*syevd_t)(char*, char*, int*, void*, int*, void*, void*, int*, int*, int*,
                        int*);
typedef void (*heevd_t)(char*, char*, int*, void*, int*, void*, void*, int*, void*, int*,
                        int*, int*, int*);
typedef void (*gesdd_t)(char*, int*, int*, void*, int*, void*, void*, int*, void*, int*,
                        void*, int*, int*, int*);
typedef void (*cgesdd_t)(char*, int*, int*, void*, int*, void*, void*, int*, void*, int*,
                         void*, int*, void*, int*, int*);

typedef struct {
  int prefix;    /* 0-3 */
  size_t es;     /* element bytes */
  size_t rs;     /* bytes of the real type */
  int cplx;
} dtype_t;

static int dtype_of(XLA_FFI_DataType t, dtype_t* d) {
  switch (t) {
    case XLA_FFI_DataType_F32: *d = (dtype_t){0, 4, 4, 0}; return 1;
    case XLA_FFI_DataType_F64: *d = (dtype_t){1, 8, 8, 0}; return 1;
    case XLA_FFI_DataType_C64: *d = (dtype_t){2, 8, 4, 1}; return 1;
    case XLA_FFI_DataType_C128: *d = (dtype_t){3, 16, 8, 1}; return 1;
    default: return 0;
  }
}

static XLA_FFI_Error* fail(XLA_FFI_CallFrame* f, const char* msg) {
  XLA_FFI_Error_Create_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  a.message = msg;
  a.errc = XLA_FFI_Error_Code_INTERNAL;
  return f->api->XLA_FFI_Error_Create(&a);
}

static XLA_FFI_Buffer* arg(XLA_FFI_CallFrame* f, int i) {
  return (XLA_FFI_Buffer*)f->args.args[i];
}

static XLA_FFI_Buffer* ret(XLA_FFI_CallFrame* f, int i) {
  return (XLA_FFI_Buffer*)f->rets.rets[i];
}

/* Attribute `name` as a character (ui8 scalar, LAPACK's 'L', 'N'...), else `dflt`. */
static int64_t attr_int(XLA_FFI_CallFrame* f, const char* name, int64_t dflt) {
  size_t n = strlen(name);
  for (int64_t i = 0; i < f->attrs.size; i++) {
    XLA_FFI_ByteSpan* s = f->attrs.names[i];
    if (s->len != n || memcmp(s->ptr, name, n) || f->attrs.types[i] != XLA_FFI_AttrType_SCALAR)
      continue;
    XLA_FFI_Scalar* v = (XLA_FFI_Scalar*)f->attrs.attrs[i];
    switch (v->dtype) {
      case XLA_FFI_DataType_PRED: case XLA_FFI_DataType_U8: return *(uint8_t*)v->value;
      case XLA_FFI_DataType_S8: return *(int8_t*)v->value;
      case XLA_FFI_DataType_S32: return *(int32_t*)v->value;
      case XLA_FFI_DataType_U32: return *(uint32_t*)v->value;
      case XLA_FFI_DataType_S64: case XLA_FFI_DataType_U64: return *(int64_t*)v->value;
      default: return dflt;
    }
  }
  return dflt;
}

static int64_t batch_of(XLA_FFI_Buffer* b, int core) {
  int64_t n = 1;
  for (int64_t i = 0; i + core < b->rank; i++) n *= b->dims[i];
  return n;
}

/* dst (cols x rows, row-major) = transpose of src (rows x cols, row-major): a row-major
 * matrix to column-major with ld = rows, or back with the arguments swapped. */
#define TILE 32
#define TRANSPOSE(T)                                                           \
  static void tr_##T(const T* src, T* dst, int64_t rows, int64_t cols) {       \
    for (int64_t i0 = 0; i0 < rows; i0 += TILE)                                \
      for (int64_t j0 = 0; j0 < cols; j0 += TILE) {                            \
        int64_t i1 = i0 + TILE < rows ? i0 + TILE : rows;                      \
        int64_t j1 = j0 + TILE < cols ? j0 + TILE : cols;                      \
        for (int64_t i = i0; i < i1; i++)                                      \
          for (int64_t j = j0; j < j1; j++) dst[j * rows + i] = src[i * cols + j]; \
      }                                                                        \
  }
typedef struct { uint64_t a, b; } u128_t;
TRANSPOSE(uint32_t)
TRANSPOSE(uint64_t)
TRANSPOSE(u128_t)

static void transpose(const void* src, void* dst, int64_t rows, int64_t cols, size_t es) {
  if (es == 4) tr_uint32_t(src, dst, rows, cols);
  else if (es == 8) tr_uint64_t(src, dst, rows, cols);
  else tr_u128_t(src, dst, rows, cols);
}

static int threads_begin(double flops) {
  if (set_threads == NULL || flops >= threads_flops) return -1;
  return set_threads(1);
}

static void threads_end(int old) {
  if (old >= 0) set_threads(old);
}

static double work_size(const void* w, const dtype_t* d) {
  return d->rs == 4 ? (double)*(const float*)w : *(const double*)w;
}

#define CHECK_DTYPE(buf)                                                     \
  dtype_t dt;                                                                \
  if (!dtype_of((buf)->dtype, &dt)) return fail(f, "oxla-lapack: unsupported dtype"); \
  if (FN[dt.prefix][KIND] == NULL) return fail(f, "oxla-lapack: routine not bound");

#define KIND GETRF
/* a [*, m, n] -> lu [*, m, n], ipiv [*, min(m, n)] (1-based), info [*]. */
XLA_FFI_Error* oxla_lapack_getrf(XLA_FFI_CallFrame* f) {
  XLA_FFI_Buffer *a = arg(f, 0), *lu = ret(f, 0), *piv = ret(f, 1), *info = ret(f, 2);
  CHECK_DTYPE(a);
  int m = (int)a->dims[a->rank - 2], n = (int)a->dims[a->rank - 1];
  int k = m < n ? m : n, lda = m > 1 ? m : 1;
  int64_t nb = batch_of(a, 2), sz = (int64_t)m * n;
  void* s = malloc((sz > 0 ? sz : 1) * dt.es);
  if (!s) return fail(f, "oxla-lapack: out of memory");
  int old = threads_begin((double)m * n * k);
  for (int64_t b = 0; b < nb; b++) {
    int32_t* ip = (int32_t*)piv->data + b * k;
    int32_t* inf = (int32_t*)info->data + b;
    transpose((char*)a->data + b * sz * dt.es, s, m, n, dt.es);
    if (sz > 0) ((getrf_t)FN[dt.prefix][KIND])(&m, &n, s, &lda, ip, inf);
    else *inf = 0;
    transpose(s, (char*)lu->data + b * sz * dt.es, n, m, dt.es);
  }
  threads_end(old);
  free(s);
  return NULL;
}
#undef KIND

#define KIND TRSM
/* a [*, k, k] triangular, b [*, m, n] -> x [*, m, n] with op(a) x = b (side L) or
 * x op(a) = b (side R). The row-major x is column-major x^T, and x^T solves the problem
 * with the other side and the other triangle on the column-major a^T, the same op. */
XLA_FFI_Error* oxla_lapack_trsm(XLA_FFI_CallFrame* f) {
  XLA_FFI_Buffer *a = arg(f, 0), *b = arg(f, 1), *x = ret(f, 0);
  CHECK_DTYPE(b);
  char side = attr_int(f, "side", 'L') == 'R' ? 'L' : 'R';
  char uplo = attr_int(f, "uplo", 'L') == 'U' ? 'L' : 'U';
  char trans = (char)attr_int(f, "trans_x", 'N');
  char diag = (char)attr_int(f, "diag", 'N');
  int m = (int)b->dims[b->rank - 2], n = (int)b->dims[b->rank - 1];
  int k = (int)a->dims[a->rank - 1];
  int cm = n, cn = m, lda = k > 1 ? k : 1, ldb = n > 1 ? n : 1;
  int64_t nb = batch_of(b, 2), na = batch_of(a, 2), sb = (int64_t)m * n, sa = (int64_t)k * k;
  double one[2] = {1.0, 0.0};
  float onef[2] = {1.0f, 0.0f};
  void* alpha = dt.rs == 4 ? (void*)onef : (void*)one;
  memcpy(x->data, b->data, nb * sb * dt.es);
  int old = threads_begin((double)m * n * k);
  for (int64_t i = 0; i < nb && sb > 0 && k > 0; i++)
    ((trsm_t)FN[dt.prefix][KIND])(&side, &uplo, &trans, &diag, &cm, &cn, alpha,
                                  (char*)a->data + (na == nb ? i : 0) * sa * dt.es, &lda,
                                  (char*)x->data + i * sb * dt.es, &ldb);
  threads_end(old);
  return NULL;
}
#undef KIND

#define KIND POTRF
/* dst = (src + src^H) / 2 for one n x n row-major matrix, per component (real and
 * imaginary parts halved separately): rows i >= j only when `lower`, i <= j only when
 * `upper`, every element when both. Blocked so the transposed reads stay in cache. */
#define HERMITIAN_PART(NAME, T, CPLX)                                             \
  static void herm_##NAME(const T* src, T* dst, int64_t n, int lower, int upper) {  \
    const int64_t w = CPLX ? 2 : 1;                                               \
    for (int64_t i0 = 0; i0 < n; i0 += TILE)                                      \
      for (int64_t j0 = 0; j0 < n; j0 += TILE) {                                  \
        int64_t i1 = i0 + TILE < n ? i0 + TILE : n;                               \
        int64_t j1 = j0 + TILE < n ? j0 + TILE : n;                               \
        if ((!upper && j0 >= i1) || (!lower && i0 >= j1)) continue;               \
        for (int64_t i = i0; i < i1; i++) {                                       \
          int64_t lo = !lower && i > j0 ? i : j0, hi = !upper && i + 1 < j1 ? i + 1 : j1; \
          for (int64_t j = lo; j < hi; j++) {                                     \
            const T* x = src + (i * n + j) * w;                                   \
            const T* y = src + (j * n + i) * w;                                   \
            T* d = dst + (i * n + j) * w;                                         \
            d[0] = (x[0] + y[0]) / 2;                                             \
            if (CPLX) d[w - 1] = (x[w - 1] - y[w - 1]) / 2;                       \
          }                                                                       \
        }                                                                         \
      }                                                                           \
  }
HERMITIAN_PART(float, float, 0)
HERMITIAN_PART(double, double, 0)
HERMITIAN_PART(cfloat, float, 1)
HERMITIAN_PART(cdouble, double, 1)

static void hermitian_part(const void* src, void* dst, int64_t n, const dtype_t* d,
                           int lower, int upper) {
  if (d->rs == 4) {
    if (d->cplx) herm_cfloat(src, dst, n, lower, upper);
    else herm_float(src, dst, n, lower, upper);
  } else {
    if (d->cplx) herm_cdouble(src, dst, n, lower, upper);
    else herm_double(src, dst, n, lower, upper);
  }
}

/* The triangle of a row-major n x n matrix other than `keep` ('L': i >= j) set to 0. */
static void zero_other(void* m, int64_t n, size_t es, char keep) {
  for (int64_t i = 0; i < n; i++) {
    if (keep == 'L') memset((char*)m + (i * n + i + 1) * es, 0, (n - i - 1) * es);
    else memset((char*)m + i * n * es, 0, i * es);
  }
}

/* Every element of n row-major elements the default quiet NaN. */
static void fill_nan(void* m, int64_t count, const dtype_t* d) {
  int64_t k = count * (int64_t)(d->es / d->rs);
  if (d->rs == 4) for (int64_t i = 0; i < k; i++) ((float*)m)[i] = NAN;
  else for (int64_t i = 0; i < k; i++) ((double*)m)[i] = (double)NAN;
}

/* a [*, n, n] -> c [*, n, n] (the uplo triangle the factor, the other one a's), info.
 * Row-major a is column-major a^T: its other triangle holds the conjugate of the same
 * Hermitian matrix, whose factor there, read row-major, is exactly the wanted factor
 * (U^T U-bar = conj(U^H U)); so LAPACK runs in place on a copy with uplo swapped.
 * oxla's attributes (oxla_lapack/fold.py): oxla_hermitian_part factors (a + a^H) / 2,
 * oxla_nan_on_error fills a failed matrix (info != 0) with NaN, oxla_zero_other then
 * zeroes the triangle other than uplo's. */
XLA_FFI_Error* oxla_lapack_potrf(XLA_FFI_CallFrame* f) {
  XLA_FFI_Buffer *a = arg(f, 0), *c = ret(f, 0), *info = ret(f, 1);
  CHECK_DTYPE(a);
  char keep = attr_int(f, "uplo", 'L') == 'U' ? 'U' : 'L';
  char uplo = keep == 'U' ? 'L' : 'U';
  int herm = attr_int(f, "oxla_hermitian_part", 0) != 0;
  int nan_on_error = attr_int(f, "oxla_nan_on_error", 0) != 0;
  int zero = attr_int(f, "oxla_zero_other", 0) != 0;
  int n = (int)a->dims[a->rank - 1], lda = n > 1 ? n : 1;
  int64_t nb = batch_of(a, 2), sz = (int64_t)n * n;
  if (!herm) memcpy(c->data, a->data, nb * sz * dt.es);
  int old = threads_begin((double)n * n * n / 3);
  for (int64_t b = 0; b < nb; b++) {
    int32_t* inf = (int32_t*)info->data + b;
    char* m = (char*)c->data + b * sz * dt.es;
    if (herm) {  /* with the other triangle zeroed anyway, only uplo's is computed */
      hermitian_part((char*)a->data + b * sz * dt.es, m, n, &dt,
                     !zero || keep == 'L', !zero || keep == 'U');
      if (zero) zero_other(m, n, dt.es, keep);
    }
    if (n > 0) ((potrf_t)FN[dt.prefix][KIND])(&uplo, &n, m, &lda, inf);
    else *inf = 0;
    if (nan_on_error && *inf != 0) fill_nan(m, sz, &dt);
    if (zero && (!herm || (nan_on_error && *inf != 0))) zero_other(m, n, dt.es, keep);
  }
  threads_end(old);
  return NULL;
}
#undef KIND

/* The optimal lwork a workspace query left in `w` (at least `least`). */
static int lwork_of(const void* w, const dtype_t* d, int least) {
  int v = (int)work_size(w, d);
  return v > least ? v : least;
}

/* geqrf (a [*, m, n] -> qr [*, m, n], tau [*, min(m, n)]) and orgqr/ungqr (a [*, m, n],
 * tau [*, k] -> q [*, m, n]): one matrix in, one out, a workspace, no info. */
static XLA_FFI_Error* qr_family(XLA_FFI_CallFrame* f, int kind) {
  XLA_FFI_Buffer *a = arg(f, 0), *out = ret(f, 0);
  XLA_FFI_Buffer* tau = kind == GEQRF ? ret(f, 1) : arg(f, 1);
  dtype_t dt;
  if (!dtype_of(a->dtype, &dt)) return fail(f, "oxla-lapack: unsupported dtype");
  if (FN[dt.prefix][kind] == NULL) return fail(f, "oxla-lapack: routine not bound");
  int m = (int)a->dims[a->rank - 2], n = (int)a->dims[a->rank - 1];
  int k = kind == GEQRF ? (m < n ? m : n) : (int)tau->dims[tau->rank - 1];
  int lda = m > 1 ? m : 1, info = 0, lwork = -1;
  int64_t nb = batch_of(a, 2), sz = (int64_t)m * n;
  if (sz == 0) return NULL;
  geqrf_t geqrf = (geqrf_t)FN[dt.prefix][kind];
  orgqr_t orgqr = (orgqr_t)FN[dt.prefix][kind];
  double q[4];
  void* s = malloc(sz * dt.es);
  if (kind == GEQRF) geqrf(&m, &n, s, &lda, q, q, &lwork, &info);
  else orgqr(&m, &n, &k, s, &lda, q, q, &lwork, &info);
  lwork = lwork_of(q, &dt, n > 1 ? n : 1);
  void* w = malloc((size_t)lwork * dt.es);
  if (!s || !w) {
    free(s);
    free(w);
    return fail(f, "oxla-lapack: out of memory");
  }
  int old = threads_begin((double)m * n * k);
  for (int64_t b = 0; b < nb; b++) {
    void* tb = (char*)tau->data + b * k * dt.es;
    transpose((char*)a->data + b * sz * dt.es, s, m, n, dt.es);
    if (kind == GEQRF) geqrf(&m, &n, s, &lda, tb, w, &lwork, &info);
    else orgqr(&m, &n, &k, s, &lda, tb, w, &lwork, &info);
    transpose(s, (char*)out->data + b * sz * dt.es, n, m, dt.es);
  }
  threads_end(old);
  free(s);
  free(w);
  return NULL;
}

XLA_FFI_Error* oxla_lapack_geqrf(XLA_FFI_CallFrame* f) { return qr_family(f, GEQRF); }

XLA_FFI_Error* oxla_lapack_orgqr(XLA_FFI_CallFrame* f) { return qr_family(f, ORGQR); }

#define KIND SYEVD
/* a [*, n, n] Hermitian -> v [*, n, n] (eigenvectors, mode V; else what LAPACK left),
 * w [*, n] real eigenvalues ascending, info [*]. */
XLA_FFI_Error* oxla_lapack_syevd(XLA_FFI_CallFrame* f) {
  XLA_FFI_Buffer *a = arg(f, 0), *v = ret(f, 0), *w = ret(f, 1), *info = ret(f, 2);
  CHECK_DTYPE(a);
  char jobz = attr_int(f, "mode", 'V') == 'V' ? 'V' : 'N';
  char uplo = attr_int(f, "uplo", 'L') == 'U' ? 'U' : 'L';
  int n = (int)a->dims[a->rank - 1], lda = n > 1 ? n : 1, lwork = -1, lrwork = -1;
  int liwork = -1, qi = 0, inf = 0;
  int64_t nb = batch_of(a, 2), sz = (int64_t)n * n;
  if (n == 0) {
    memset(info->data, 0, nb * sizeof(int32_t));
    return NULL;
  }
  double wq[4], rq[4];
  void* s = malloc(sz * dt.es);
  if (dt.cplx)
    ((heevd_t)FN[dt.prefix][KIND])(&jobz, &uplo, &n, s, &lda, w->data, wq, &lwork, rq,
                                   &lrwork, &qi, &liwork, &inf);
  else
    ((syevd_t)FN[dt.prefix][KIND])(&jobz, &uplo, &n, s, &lda, w->data, wq, &lwork, &qi,
                                   &liwork, &inf);
  lwork = lwork_of(wq, &dt, 1);
  lrwork = dt.cplx ? lwork_of(rq, &dt, 1) : 1;
  liwork = qi > 1 ? qi : 1;
  void* work = malloc((size_t)lwork * dt.es);
  void* rwork = malloc((size_t)lrwork * dt.rs);
  int* iwork = malloc((size_t)liwork * sizeof(int));
  if (!s || !work || !rwork || !iwork) {
    free(s);
    free(work);
    free(rwork);
    free(iwork);
    return fail(f, "oxla-lapack: out of memory");
  }
  int old = threads_begin(4.0 * n * n * n);
  for (int64_t b = 0; b < nb; b++) {
    void* wb = (char*)w->data + b * n * dt.rs;
    int32_t* ib = (int32_t*)info->data + b;
    transpose((char*)a->data + b * sz * dt.es, s, n, n, dt.es);
    if (dt.cplx)
      ((heevd_t)FN[dt.prefix][KIND])(&jobz, &uplo, &n, s, &lda, wb, work, &lwork, rwork,
                                     &lrwork, iwork, &liwork, ib);
    else
      ((syevd_t)FN[dt.prefix][KIND])(&jobz, &uplo, &n, s, &lda, wb, work, &lwork, iwork,
                                     &liwork, ib);
    transpose(s, (char*)v->data + b * sz * dt.es, n, n, dt.es);
  }
  threads_end(old);
  free(s);
  free(work);
  free(rwork);
  free(iwork);
  return NULL;
}
#undef KIND

#define KIND GESDD
/* a [*, m, n] -> a' (what LAPACK left), s [*, k] real, u [*, m, m or k], vt [*, n or k,
 * n], info [*]; mode A (full), S (economy) or N (no vectors: u, vt zero). */
XLA_FFI_Error* oxla_lapack_gesdd(XLA_FFI_CallFrame* f) {
  XLA_FFI_Buffer *a = arg(f, 0), *ao = ret(f, 0), *sv = ret(f, 1), *u = ret(f, 2);
  XLA_FFI_Buffer *vt = ret(f, 3), *info = ret(f, 4);
  CHECK_DTYPE(a);
  int64_t mode = attr_int(f, "mode", 'A');
  char jobz = mode == 'A' ? 'A' : mode == 'S' ? 'S' : 'N';
  int m = (int)a->dims[a->rank - 2], n = (int)a->dims[a->rank - 1];
  int k = m < n ? m : n, mx = m > n ? m : n, lda = m > 1 ? m : 1, lwork = -1, inf = 0;
  int ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  int ldu = jobz == 'N' ? 1 : (m > 1 ? m : 1);
  int ldvt = jobz == 'N' ? 1 : (vrows > 1 ? vrows : 1);
  int64_t nb = batch_of(a, 2), sz = (int64_t)m * n;
  int64_t su = jobz == 'N' ? 1 : (int64_t)m * ucols, sv_ = jobz == 'N' ? 1 : (int64_t)vrows * n;
  size_t uo = (size_t)batch_of(u, 2) * u->dims[u->rank - 2] * u->dims[u->rank - 1];
  size_t vo = (size_t)batch_of(vt, 2) * vt->dims[vt->rank - 2] * vt->dims[vt->rank - 1];
  if (jobz == 'N') {
    memset(u->data, 0, uo * dt.es);
    memset(vt->data, 0, vo * dt.es);
  }
  if (sz == 0) {
    memset(info->data, 0, nb * sizeof(int32_t));
    return NULL;
  }
  int64_t lrwork = jobz == 'N' ? 7 * (int64_t)k
                               : (5 * (int64_t)k * k + 5 * k > 2 * (int64_t)mx * k + 2 * (int64_t)k * k + k
                                      ? 5 * (int64_t)k * k + 5 * k
                                      : 2 * (int64_t)mx * k + 2 * (int64_t)k * k + k);
  double wq[4];
  void* s = malloc(sz * dt.es);
  void* us = malloc(su * dt.es);
  void* vs = malloc(sv_ * dt.es);
  void* rwork = malloc((size_t)(dt.cplx ? lrwork : 1) * dt.rs);
  int* iwork = malloc((size_t)(8 * k > 1 ? 8 * k : 1) * sizeof(int));
  if (dt.cplx)
    ((cgesdd_t)FN[dt.prefix][KIND])(&jobz, &m, &n, s, &lda, sv->data, us, &ldu, vs, &ldvt,
                                    wq, &lwork, rwork, iwork, &inf);
  else
    ((gesdd_t)FN[dt.prefix][KIND])(&jobz, &m, &n, s, &lda, sv->data, us, &ldu, vs, &ldvt,
                                   wq, &lwork, iwork, &inf);
  lwork = lwork_of(wq, &dt, 1);
  void* work = malloc((size_t)lwork * dt.es);
  if (!s || !us || !vs || !rwork || !iwork || !work) {
    free(s); free(us); free(vs); free(rwork); free(iwork); free(work);
    return fail(f, "oxla-lapack: out of memory");
  }
  int old = threads_begin(4.0 * m * n * k);
  for (int64_t b = 0; b < nb; b++) {
    void* sb = (char*)sv->data + b * k * dt.rs;
    int32_t* ib = (int32_t*)info->data + b;
    transpose((char*)a->data + b * sz * dt.es, s, m, n, dt.es);
    if (dt.cplx)
      ((cgesdd_t)FN[dt.prefix][KIND])(&jobz, &m, &n, s, &lda, sb, us, &ldu, vs, &ldvt, work,
                                      &lwork, rwork, iwork, ib);
    else
      ((gesdd_t)FN[dt.prefix][KIND])(&jobz, &m, &n, s, &lda, sb, us, &ldu, vs, &ldvt, work,
                                     &lwork, iwork, ib);
    transpose(s, (char*)ao->data + b * sz * dt.es, n, m, dt.es);
    if (jobz != 'N') {
      transpose(us, (char*)u->data + b * su * dt.es, ucols, m, dt.es);
      transpose(vs, (char*)vt->data + b * sv_ * dt.es, n, vrows, dt.es);
    }
  }
  threads_end(old);
  free(s); free(us); free(vs); free(rwork); free(iwork); free(work);
  return NULL;
}
#undef KIND
