#include <cstdint>
#include <string_view>
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;

// y = x * scale + offset (+ bias[i % n] when mode == "bias"), rows along the last dim
static ffi::Error AffineImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> bias,
                             ffi::ResultBuffer<ffi::F32> y, float scale, int64_t offset,
                             std::string_view mode, ffi::Span<const int64_t> shift) {
  if (mode != "bias" && mode != "plain")
    return ffi::Error::InvalidArgument("mode must be bias or plain");
  auto dims = x.dimensions();
  int64_t n = dims.back();
  size_t total = x.element_count();
  int64_t s = shift.size() ? shift[0] : 0;
  for (size_t i = 0; i < total; i++) {
    float b = mode == "bias" ? bias.typed_data()[(i + s) % n] : 0.0f;
    y->typed_data()[i] = x.typed_data()[i] * scale + (float)offset + b;
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(OxlaTestAffine, AffineImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("scale")
                                  .Attr<int64_t>("offset")
                                  .Attr<std::string_view>("mode")
                                  .Attr<ffi::Span<const int64_t>>("shift"));
