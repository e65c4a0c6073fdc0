// Fused RMSNorm in OpenCL C (SYCL through dpctl): one work-item per row.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void demo_rmsnorm(__global const float* x, __global const float* w,
                           __global float* y, long d, float eps) {
  size_t r = get_global_id(0);
  __global const float* xr = x + r * d;
  __global float* yr = y + r * d;
  double s = 0.0;
  for (long i = 0; i < d; i++) s += (double)xr[i] * xr[i];
  float inv = 1.0f / sqrt((float)(s / (double)d) + eps);
  for (long i = 0; i < d; i++) yr[i] = w[i] * (xr[i] * inv);
}
