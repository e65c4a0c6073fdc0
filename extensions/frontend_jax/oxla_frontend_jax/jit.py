"""``oxla_frontend_jax.jit``: a drop-in for ``jax.jit`` that runs on an oxla backend."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from oxla.errors import NotSupportedError, OxlaError
from oxla.ir import Module, parse_module
from oxla.protocols import CompileOptions, Executable
from oxla_frontend_jax._jax import require_jax
from oxla_frontend_jax.linalg import check_targets
from oxla_frontend_jax.values import to_numpy_args, wrap_outputs
from oxla_frontend_jax.xla_calls import legalize_xla_custom_calls

_PY_SCALARS = (bool, int, float, complex)


def _as_tuple(nums: int | Iterable[int] | None) -> tuple[int, ...]:
    if nums is None:
        return ()
    if isinstance(nums, int):
        return (nums,)
    return tuple(nums)


def _leaf_key(leaf: Any) -> Hashable:
    """The part of the cache key one flat argument contributes: its abstract value."""
    if isinstance(leaf, _PY_SCALARS):
        return type(leaf).__name__
    shape = tuple(getattr(leaf, "shape", ()))
    dtype = str(getattr(leaf, "dtype", type(leaf).__name__))
    return shape, dtype, bool(getattr(leaf, "weak_type", False))


@dataclass
class CompiledEntry:
    """One compiled specialization of a jitted function.

    Attributes:
        module_text: the imported StableHLO module as text (before the backend ran).
        executable: the oxla executable.
        kept: indices of the flat arguments the module takes.
        out_tree: the pytree structure of the results (jax's ``out_tree``).
    """

    module_text: str
    executable: Executable
    kept: tuple[int, ...]
    out_tree: Any


class JitFunction:
    """A function compiled by oxla per input signature; see :func:`jit`.

    Attributes:
        backend: the oxla backend name.
        compile_count: how many specializations were compiled.
        cache_hits: how many calls reused one.
    """

    def __init__(
        self,
        fun: Callable[..., Any],
        backend: str,
        static_argnums: tuple[int, ...],
        static_argnames: tuple[str, ...],
        return_numpy: bool,
        options: CompileOptions | None,
    ):
        self.fun = fun
        self.backend = backend
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self.return_numpy = return_numpy
        self.options = options
        self.compile_count = 0
        self.cache_hits = 0
        self._cache: dict[Hashable, CompiledEntry] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fun)

    # -- signature ----------------------------------------------------------------
    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, tuple, tuple]:
        n = len(args)
        static_idx = {i % n if n else i for i in self.static_argnums if -n <= i < n}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_idx)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        statics = tuple((i, args[i]) for i in sorted(static_idx))
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        return dyn_args, dyn_kwargs, statics, static_kw

    def _key(self, args: tuple, kwargs: dict) -> tuple[Hashable, list[Any]]:
        jax = require_jax()
        dyn_args, dyn_kwargs, statics, static_kw = self._split(args, kwargs)
        leaves, tree = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
        key = (tree, tuple(_leaf_key(x) for x in leaves), statics, static_kw)
        try:
            hash(key)
        except TypeError as exc:
            raise OxlaError(f"static arguments must be hashable, as for jax.jit: {exc}") from exc
        return key, leaves

    # -- lowering -----------------------------------------------------------------
    def lower(self, *args: Any, **kwargs: Any) -> tuple[Module, tuple[int, ...], Any]:
        """Traces and lowers with JAX, imports the StableHLO text.

        Returns:
            ``(module, kept, out_tree)``: the module, the indices of the flat arguments
            its ``main`` takes, and the result pytree structure.

        Raises:
            NotSupportedError: the lowered module takes arguments oxla cannot supply
                (effect tokens).
        """
        jax = require_jax()
        jitted = jax.jit(self.fun, static_argnums=self.static_argnums,
                         static_argnames=self.static_argnames, keep_unused=True)
        lowered = jitted.lower(*args, **kwargs)
        name = getattr(self.fun, "__name__", "fun")
        module = parse_module(lowered.as_text(), f"<jax.jit {name}>")
        legalize_xla_custom_calls(module)
        kept = _kept_var_idx(lowered, lowered.in_tree.num_leaves)
        n_main = len(module.main.regions[0].block.args)
        if n_main != len(kept):
            raise NotSupportedError(
                f"the module JAX lowered for '{name}' takes {n_main} arguments, expected "
                f"{len(kept)} (one per kept array argument); effect tokens are not supported")
        return module, kept, lowered.out_tree

    def _compile(self, args: tuple, kwargs: dict) -> CompiledEntry:
        import oxla
        from oxla.ir import print_module

        module, kept, out_tree = self.lower(*args, **kwargs)
        check_targets(module, self.backend)
        text = print_module(module)
        exe = oxla.compile(module, backend=self.backend, options=self.options)
        self.compile_count += 1
        return CompiledEntry(text, exe, kept, out_tree)

    # -- calling ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key, leaves = self._key(args, kwargs)
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                entry = self._cache[key] = self._compile(args, kwargs)
            else:
                self.cache_hits += 1
        flat = [leaves[i] for i in entry.kept]
        outs = entry.executable(*to_numpy_args(flat, entry.executable.signature.inputs))
        return wrap_outputs(outs, entry.out_tree, self.return_numpy)

    def entries(self) -> list[CompiledEntry]:
        """The compiled specializations, oldest first."""
        return list(self._cache.values())

    def clear_cache(self) -> None:
        """Forgets every compiled specialization."""
        with self._lock:
            self._cache.clear()


def _kept_var_idx(lowered: Any, n_flat: int) -> tuple[int, ...]:
    """The flat argument indices JAX kept; all of them, as ``keep_unused=True`` asks,
    unless this JAX version pruned anyway and says so in its compile args."""
    compile_args = getattr(getattr(lowered, "_lowering", None), "compile_args", None) or {}
    kept = compile_args.get("kept_var_idx")
    return tuple(sorted(kept)) if kept is not None else tuple(range(n_flat))


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    backend: str = "interpreter",
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    return_numpy: bool = False,
    options: CompileOptions | None = None,
) -> Any:
    """Compiles ``fun`` with oxla, like ``jax.jit`` compiles it with XLA.

    Each call with a new input signature (pytree structure, shapes, dtypes and weak
    types of the array leaves, values of the static arguments) traces ``fun`` with
    JAX, lowers it to StableHLO, imports and compiles it on ``backend``; later calls
    with that signature reuse the executable.

    Args:
        fun: the function; usable as ``@jit`` or ``@jit(backend="cpu")``.
        backend: an installed oxla backend (``interpreter``, ``cpu``, ...).
        static_argnums: positional arguments that are Python values baked into the
            program (hashable), as in ``jax.jit``.
        static_argnames: keyword arguments likewise.
        donate_argnums: accepted for drop-in compatibility; oxla never writes into its
            inputs, so donation changes nothing.
        return_numpy: return numpy arrays instead of jax arrays.
        options: oxla compile options for the backend.

    Returns:
        A :class:`JitFunction` (or a decorator making one when ``fun`` is omitted).

    Raises:
        PluginError: jax is not installed, or the backend is unknown.
        RuntimeInputError: at call time, arguments the executable does not accept.
    """
    del donate_argnums

    def make(f: Callable[..., Any]) -> JitFunction:
        names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
        return JitFunction(f, backend, _as_tuple(static_argnums), tuple(names or ()),
                           return_numpy, options)

    return make if fun is None else make(fun)
