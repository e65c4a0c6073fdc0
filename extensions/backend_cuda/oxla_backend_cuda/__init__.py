"""oxla-backend-cuda: the ``cuda`` backend (SIMT kernels as PTX, cuBLAS dots, a
cuda-python runtime, and a simulated device for machines without a GPU).

Select ``--backend cuda``; ``OXLA_CUDA_DEVICE=sim`` runs on the simulated device
(:mod:`oxla_backend_cuda.sim`). Importing this package alone imports nothing heavy.
"""
