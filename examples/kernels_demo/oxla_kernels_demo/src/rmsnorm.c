/* Fused RMSNorm over the last dim: y = w * x / sqrt(mean(x*x) + eps), f32, row-major. */
#include <math.h>
#include <stddef.h>
#include "oxla_kernel.h"

void demo_rmsnorm(void** outputs, const void** inputs, const char* cfg, size_t n) {
  const float* x = (const float*)inputs[0];
  const float* w = (const float*)inputs[1];
  float* y = (float*)outputs[0];
  long long d = oxla_dim(cfg, n, "in0", -1);
  long long rows = oxla_numel(cfg, n, "in0") / (d > 0 ? d : 1);
  float eps = (float)oxla_attr_f64(cfg, n, "eps", 1e-6);
  for (long long r = 0; r < rows; r++) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    double s = 0.0;
    for (long long i = 0; i < d; i++) s += (double)xr[i] * xr[i];
    float inv = 1.0f / sqrtf((float)(s / (double)d) + eps);
    for (long long i = 0; i < d; i++) yr[i] = w[i] * (xr[i] * inv);
  }
}
