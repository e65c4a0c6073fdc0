"""oxla-backend-cpu: the ``cpu`` backend (fusion, buffer assignment, LLVM, BLAS).

Import :class:`oxla_backend_cpu.backend.CPUBackend` or select ``--backend cpu``;
importing this package alone imports nothing heavy.
"""
