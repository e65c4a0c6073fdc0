"""oxla-backend-hip: the ``hip`` backend (SIMT kernels as AMDGPU code objects, rocBLAS
dots, a HIP runtime by ctypes, and a simulated device for machines without an AMD GPU).

Select ``--backend hip``; ``OXLA_HIP_DEVICE=sim`` runs on the simulated device
(:mod:`oxla_codegen_llvm.gpu.sim`). Importing this package alone imports nothing heavy.
"""
