"""The one interface behind which target details live.

Emitters never ask "am I on a CPU"; they ask the :class:`Target` for what differs
between machines: the triple and data layout, the vector width for an element type,
how a math function is called, the address space of kernel buffers, and how a kernel
finds which part of the iteration space it owns (a whole loop nest on a CPU; thread
and block indices on NVPTX/AMDGPU, added later by subclasses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import llvmlite.binding as llvm
import llvmlite.ir as ir

from oxla_codegen_llvm.vmath import vector_math_function

# Functions that are LLVM intrinsics on every target: ``llvm.<name>.<f32|f64>``. On the
# CPU the JIT resolves the ones without an instruction (exp, log, sin...) to the
# process's libm, so their accuracy is libm's (glibc: < 1 ulp for f32 and f64).
INTRINSIC_MATH = frozenset({
    "exp", "log", "sqrt", "sin", "cos", "floor", "ceil", "fabs", "pow",
    "roundeven", "round", "maximum", "minimum", "copysign", "tan",
})
# Functions called by their C name (libm), suffix ``f`` for f32.
LIBM_MATH = frozenset({"tanh", "expm1", "log1p", "atan2", "cbrt", "hypot", "sinh", "cosh"})


UNROLL_THRESHOLD = 50
"""LLVM's loop-unroll cost threshold (its ``-O3`` default is 300). At 300, vectorized
loops with constant trip counts (transposes, im2col, small GEMM-like loops) are unrolled
completely: up to 10x the code, 2-10x the optimization and code generation time
(a small CNN: 0.99 s -> 0.08 s at 50), for run times within noise on the benchmark
programs (layer norm faster). Loops over a few elements (3x3 windows) still unroll."""


@cache
def _init_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    # A process-wide LLVM option (llvmlite's LLVM, not jaxlib's): set once, here.
    llvm.set_option("oxla", f"-unroll-threshold={UNROLL_THRESHOLD}")


@dataclass
class Target:
    """Target details for the emitters; subclass per machine kind.

    Attributes:
        triple: the LLVM target triple (``x86_64-unknown-linux-gnu``).
        cpu: the LLVM CPU name (``znver4``), ``""`` for generic.
        features: LLVM feature string (``+avx2,+fma,...``).
    """

    triple: str
    cpu: str = ""
    features: str = ""
    _tm: object = field(default=None, repr=False, compare=False)
    _tm_fast: object = field(default=None, repr=False, compare=False)

    name = "generic"
    buffer_address_space = 0

    def vector_width(self, bits: int) -> int:
        """Lanes of a ``bits``-wide element in one native vector register."""
        return 1

    def math_function(self, module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
        """Returns the function computing math function ``name`` on scalars of ``ty``.

        Raises:
            KeyError: the target has no implementation of ``name``.
        """
        fn = vector_math_function(module, name, ty, self.has_fma())
        if fn is not None:
            return fn
        if name in INTRINSIC_MATH:
            n_args = 2 if name in ("pow", "maximum", "minimum", "copysign") else 1
            fname = f"llvm.{name}.{'f32' if ty == ir.FloatType() else 'f64'}"
        elif name in LIBM_MATH:
            n_args = 2 if name in ("atan2", "hypot") else 1
            fname = name + ("f" if ty == ir.FloatType() else "")
        else:
            raise KeyError(name)
        existing = module.globals.get(fname)
        if existing is not None:
            return existing
        return ir.Function(module, ir.FunctionType(ty, [ty] * n_args), fname)

    def has_fma(self) -> bool:
        """True when ``llvm.fma`` on f32 is one instruction here (not a libm call)."""
        return False

    def target_machine(self, opt: int = 3) -> llvm.TargetMachine:
        """The LLVM target machine for this target (cached; never give it to an
        execution engine, which takes ownership: use :meth:`new_target_machine`)."""
        if self._tm is None:
            self._tm = self.new_target_machine(opt)
        return self._tm  # type: ignore[return-value]

    def fast_codegen_machine(self) -> llvm.TargetMachine:
        """The cached target machine at code generation level 0 (fast instruction
        selection and register allocation), for modules with nothing to optimize
        (:func:`oxla_codegen_llvm.jit.control_only`); same CPU and features."""
        if self._tm_fast is None:
            self._tm_fast = self.new_target_machine(0)
        return self._tm_fast  # type: ignore[return-value]

    def new_target_machine(self, opt: int = 3) -> llvm.TargetMachine:
        """A fresh LLVM target machine for this target (for an execution engine)."""
        _init_llvm()
        t = llvm.Target.from_triple(self.triple)
        return t.create_target_machine(cpu=self.cpu, features=self.features, opt=opt,
                                       jit=True)


@cache
def _host(cls: type) -> CPUTarget:
    _init_llvm()
    return cls(llvm.get_process_triple(), llvm.get_host_cpu_name(),
               llvm.get_host_cpu_features().flatten())


@dataclass
class CPUTarget(Target):
    """The host CPU (x86-64 or AArch64): kernels are plain loop nests, libm for math."""

    name = "cpu"

    @classmethod
    def host(cls) -> CPUTarget:
        """The machine this process runs on, with all its CPU features (one shared
        instance per class, so its LLVM target machine is created once)."""
        return _host(cls)

    def vector_width(self, bits: int) -> int:
        if "+avx512f" in self.features:
            return 512 // bits
        if "+avx2" in self.features or "+avx" in self.features:
            return 256 // bits
        return 128 // bits

    def has_fma(self) -> bool:
        return "+fma" in self.features.split(",") or self.triple.startswith(("aarch64",
                                                                              "arm64"))

    def feature_set(self) -> set[str]:
        """The enabled features (``{"avx2", "fma", ...}``)."""
        return {f[1:] for f in self.features.split(",") if f.startswith("+")}


NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_ARCHS = ("sm_35", "sm_80", "sm_86", "sm_89", "sm_90")
"""The GPU architectures oxla emits PTX for: sm_80 (A100) to sm_90 (H100/H200), and
sm_35 only for the gpuocelot emulator (which accepts no newer ``.target``)."""


@cache
def _nvptx_options() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # No FMA contraction in LLVM's NVPTX backend (process-wide, NVPTX only): a separate
    # multiply and add stay two IEEE operations (mul.rn / add.rn in the PTX).
    llvm.set_option("oxla", "-nvptx-fma-level=0")


@dataclass
class NVPTXTarget(Target):
    """An NVIDIA GPU through LLVM's NVPTX backend: kernels are ``ptx_kernel`` functions,
    buffers are global memory (address space 1), shared memory is address space 3, and
    the thread/block ids are ``llvm.nvvm.read.ptx.sreg.*`` reads.

    Attributes:
        arch: the PTX target (``sm_80``, ``sm_90``; ``sm_35`` for gpuocelot).
    """

    triple: str = NVPTX_TRIPLE
    arch: str = "sm_90"

    name = "nvptx"
    buffer_address_space = 1
    shared_address_space = 3
    warp_size = 32

    def __post_init__(self) -> None:
        if self.arch not in NVPTX_ARCHS:
            raise ValueError(f"unknown CUDA architecture {self.arch!r}; "
                             f"known: {', '.join(NVPTX_ARCHS)}")
        self.cpu = self.arch

    @property
    def sm(self) -> int:
        """The compute capability as a number (``sm_90`` -> 90)."""
        return int(self.arch[3:])

    @property
    def has_shuffle(self) -> bool:
        """True when warp shuffles (``shfl.sync``) are used (sm_70 and up; gpuocelot's
        sm_35 has none)."""
        return self.sm >= 70

    @staticmethod
    def sreg(name: str, axis: str) -> str:
        """The intrinsic reading special register ``name`` (``tid``, ``ctaid``, ``ntid``,
        ``nctaid``) along ``axis`` (``x``/``y``/``z``)."""
        return f"llvm.nvvm.read.ptx.sreg.{name}.{axis}"

    def new_target_machine(self, opt: int = 3) -> llvm.TargetMachine:
        _nvptx_options()
        t = llvm.Target.from_triple(self.triple)
        return t.create_target_machine(cpu=self.arch, features=self.features, opt=opt)
