"""The GPU layer the cuda and hip backends share (issue #15): everything between the
SIMT kernels (:mod:`oxla_codegen_llvm.simt`) and a vendor's runtime that is not
vendor-specific.

* :mod:`~oxla_codegen_llvm.gpu.policy`: :class:`GPUPolicy` (fusion, dots through a BLAS
  library, op kernels from simt); a backend names it and adds its stages;
* :mod:`~oxla_codegen_llvm.gpu.stages`: the launch-program and executable stages;
* :mod:`~oxla_codegen_llvm.gpu.program`: the plan as a launch program (JSON steps);
* :mod:`~oxla_codegen_llvm.gpu.device`: the :class:`Device` protocol a runtime calls,
  the environment's device choice;
* :mod:`~oxla_codegen_llvm.gpu.runtime`, :mod:`~oxla_codegen_llvm.gpu.executable`: one
  runtime per device, the executable replaying its program on it (graphs, streams,
  device arrays);
* :mod:`~oxla_codegen_llvm.gpu.sim`: the simulated device (host memory, host twins with
  the arch's warp size, BLAS calls by :mod:`~oxla_codegen_llvm.gpu.gemm`'s semantics);
* :mod:`~oxla_codegen_llvm.gpu.fft`: ``stablehlo.fft`` as one vendor-FFT call and its
  semantics;
* :mod:`~oxla_codegen_llvm.gpu.arrays`: device arrays (DLPack, CUDA array interface);
* :mod:`~oxla_codegen_llvm.gpu.artifact`: reading a GPU backend's ``.oxla`` artifact.

Importing this package imports nothing; its modules import llvmlite through simt.
"""
