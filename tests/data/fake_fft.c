/* A stand-in for cuFFT and hipFFT on host memory, for tests without a GPU: the plan API
 * (PlanMany, SetStream, Exec*, Destroy) of both libraries, cuFFT's with int handles and
 * hipFFT's with pointer handles, computing each transform as a direct DFT in double
 * precision. Only the layout oxla asks for is accepted (no embeds, unit strides); an
 * entry point that does not match the plan's type fails as the libraries do. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { int rank, n[3], type, batch; } plan_t;
void *fake_last_stream;
int fake_destroyed;
static plan_t table[256];
static int used;

static int make(plan_t *p, int rank, const int *n, const int *inembed, int istride, int idist,
                const int *onembed, int ostride, int odist, int type, int batch) {
    if (rank < 1 || rank > 3 || inembed || onembed || istride != 1 || ostride != 1 || idist ||
        odist || batch < 1)
        return 4; /* invalid value */
    p->rank = rank; p->type = type; p->batch = batch;
    for (int d = 0; d < rank; d++) { if (n[d] < 1) return 4; p->n[d] = n[d]; }
    return 0;
}

static long prod(const int *n, int r) { long t = 1; for (int d = 0; d < r; d++) t *= n[d]; return t; }

/* x (full grid of p->n, Hermitian-completed for c2r inputs) at multi-index idx, batch b */
static double complex load(const plan_t *p, const void *in, long b, const int *idx, int kind,
                           int dbl) {
    int last = p->rank - 1, h = p->n[last] / 2 + 1, j[3];
    long off = 0, stride = 1;
    if (kind == 0 || kind == 1) { /* c2c, r2c: the input's full grid */
        for (int d = last; d >= 0; d--) { off += idx[d] * stride; stride *= p->n[d]; }
        off += b * stride;
        if (kind == 1) return dbl ? ((const double *)in)[off] : ((const float *)in)[off];
        return dbl ? ((const double complex *)in)[off] : ((const float complex *)in)[off];
    }
    int conj_ = idx[last] >= h; /* c2r: X[k] = conj(X[-k]) beyond the stored half */
    for (int d = 0; d <= last; d++) j[d] = conj_ ? (p->n[d] - idx[d]) % p->n[d] : idx[d];
    for (int d = last; d >= 0; d--) { off += j[d] * stride; stride *= d == last ? h : p->n[d]; }
    off += b * stride;
    double complex v = dbl ? ((const double complex *)in)[off] : ((const float complex *)in)[off];
    return conj_ ? conj(v) : v;
}

static void next(int *idx, const int *n, int r) {
    for (int d = r - 1; d >= 0; d--) { if (++idx[d] < n[d]) return; idx[d] = 0; }
}

static int run(const plan_t *p, const void *in, void *out, int dir, int want_type) {
    if (p->type != want_type) return 3; /* invalid type */
    int kind = (want_type & 0xF) == 0x9 ? 0 : (want_type & 0xF) == 0xA ? 1 : 2;
    int dbl = want_type >= 0x60, last = p->rank - 1;
    double sign = kind == 1 ? -1.0 : kind == 2 ? 1.0 : (double)dir;
    int on[3];
    for (int d = 0; d <= last; d++) on[d] = p->n[d];
    if (kind == 1) on[last] = p->n[last] / 2 + 1;
    long total = prod(p->n, p->rank), outs = prod(on, p->rank);
    for (long b = 0; b < p->batch; b++) {
        int o[3] = {0, 0, 0};
        for (long q = 0; q < outs; q++, next(o, on, p->rank)) {
            double complex acc = 0;
            int i[3] = {0, 0, 0};
            for (long t = 0; t < total; t++, next(i, p->n, p->rank)) {
                double ph = 0;
                for (int d = 0; d <= last; d++) ph += (double)o[d] * i[d] / p->n[d];
                acc += load(p, in, b, i, kind, dbl) * cexp(sign * 2 * M_PI * I * ph);
            }
            long at = b * outs + q;
            if (kind == 2) {
                if (dbl) ((double *)out)[at] = creal(acc); else ((float *)out)[at] = (float)creal(acc);
            } else if (dbl) ((double complex *)out)[at] = acc;
            else ((float complex *)out)[at] = (float complex)acc;
        }
    }
    return 0;
}

int hipfftPlanMany(plan_t **h, int rank, int *n, int *ie, int is, int id, int *oe, int os,
                   int od, int type, int batch) {
    plan_t *p = calloc(1, sizeof *p);
    int s = make(p, rank, n, ie, is, id, oe, os, od, type, batch);
    if (s) { free(p); return s; }
    *h = p;
    return 0;
}
int hipfftSetStream(plan_t *p, void *stream) { (void)p; fake_last_stream = stream; return 0; }
int hipfftDestroy(plan_t *p) { free(p); fake_destroyed++; return 0; }
int hipfftExecC2C(plan_t *p, void *i, void *o, int d) { return run(p, i, o, d, 0x29); }
int hipfftExecZ2Z(plan_t *p, void *i, void *o, int d) { return run(p, i, o, d, 0x69); }
int hipfftExecR2C(plan_t *p, void *i, void *o) { return run(p, i, o, -1, 0x2A); }
int hipfftExecD2Z(plan_t *p, void *i, void *o) { return run(p, i, o, -1, 0x6A); }
int hipfftExecC2R(plan_t *p, void *i, void *o) { return run(p, i, o, 1, 0x2C); }
int hipfftExecZ2D(plan_t *p, void *i, void *o) { return run(p, i, o, 1, 0x6C); }

int cufftPlanMany(int *h, int rank, int *n, int *ie, int is, int id, int *oe, int os, int od,
                  int type, int batch) {
    if (used == 256) return 2; /* alloc failed */
    int s = make(&table[used], rank, n, ie, is, id, oe, os, od, type, batch);
    if (s) return s;
    *h = used++;
    return 0;
}
static plan_t *at(int h) { return h >= 0 && h < used ? &table[h] : NULL; }
int cufftSetStream(int h, void *stream) { if (!at(h)) return 1; fake_last_stream = stream; return 0; }
int cufftDestroy(int h) { if (!at(h)) return 1; fake_destroyed++; return 0; }
int cufftExecC2C(int h, void *i, void *o, int d) { return at(h) ? run(at(h), i, o, d, 0x29) : 1; }
int cufftExecZ2Z(int h, void *i, void *o, int d) { return at(h) ? run(at(h), i, o, d, 0x69) : 1; }
int cufftExecR2C(int h, void *i, void *o) { return at(h) ? run(at(h), i, o, -1, 0x2A) : 1; }
int cufftExecD2Z(int h, void *i, void *o) { return at(h) ? run(at(h), i, o, -1, 0x6A) : 1; }
int cufftExecC2R(int h, void *i, void *o) { return at(h) ? run(at(h), i, o, 1, 0x2C) : 1; }
int cufftExecZ2D(int h, void *i, void *o) { return at(h) ? run(at(h), i, o, 1, 0x6C) : 1; }
