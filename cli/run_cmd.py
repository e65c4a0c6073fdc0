"""``oxla run``: load a ``.oxla`` artifact, run it on ``.npy`` inputs, report outputs."""

from __future__ import annotations

import time
import zipfile
from typing import Any

import click
import numpy as np

from oxla.cli.options import InputPath
from oxla.errors import OxlaError

HELP_EPILOG = (
    "Inputs of ml_dtypes types (bfloat16, float8_*, ...): numpy's np.save stores them as "
    "raw bytes (dtype |V2 for bfloat16); oxla reads such a file, or a same-width unsigned "
    "int view (uint16 for bfloat16, uint8 for float8), as the type the artifact expects. "
    "Outputs of those types are written the same way; read them back with "
    "np.load(...)['result0'].view(ml_dtypes.bfloat16)."
)


def _load_input(path: str) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
        if not isinstance(array, np.ndarray):  # an .npz archive
            names = list(array.files)
            array.close()
            raise OxlaError(f"'{path}' is an .npz archive (arrays: "
                            f"{', '.join(names[:8]) or 'none'}); --input takes one .npy "
                            "file per argument")
        return array
    except FileNotFoundError as exc:
        raise OxlaError(f"no such file: {path}") from exc
    except ValueError as exc:
        if "pickle" in str(exc):  # no .npy header, or an object array (pickled items)
            if _has_npy_header(path):
                raise OxlaError(f"'{path}' holds an object array (its items are pickled, "
                                "which oxla never loads); save a numeric array, e.g. "
                                "np.save(path, np.asarray(x, dtype=np.float32))") from exc
            raise OxlaError(f"'{path}' is not a .npy file (no .npy header; write it "
                            "with numpy.save)") from exc
        raise OxlaError(f"'{path}' is not a .npy array file: {exc}") from exc
    except (OSError, EOFError, SyntaxError, TypeError, MemoryError,
            zipfile.BadZipFile) as exc:  # a damaged header, archive or huge shape
        raise OxlaError(f"'{path}' is not a readable .npy file: "
                        f"{str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"
                        ) from exc


def _has_npy_header(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(6) == b"\x93NUMPY"


def reinterpret_input(array: np.ndarray, want: Any) -> np.ndarray:
    """Returns ``array`` viewed as dtype ``want`` when it holds ``want``'s bytes untyped.

    numpy cannot name ml_dtypes types in a ``.npy`` header, so a bfloat16 array saved
    with ``np.save`` loads back as raw void (``|V2``); users also pass a same-width
    unsigned integer view (``uint16`` for bfloat16). Both are reinterpreted, not
    converted. Any other dtype is returned unchanged (the executable reports it).
    """
    if want is None or array.dtype == want or array.dtype.itemsize != np.dtype(want).itemsize:
        return array
    if array.dtype.kind == "V" and array.dtype.fields is None:
        return array.view(want)
    if array.dtype.kind == "u" and _is_ml_dtype(np.dtype(want)):
        return array.view(want)
    return array


def _is_ml_dtype(dtype: np.dtype) -> bool:
    """True for the ml_dtypes extension types (bfloat16, float8_*, int4 ...)."""
    return type(dtype).__module__.startswith("ml_dtypes") or dtype.type.__module__.startswith(
        "ml_dtypes")


def _expected_dtypes(exe: Any, count: int) -> list[Any]:
    """The numpy dtype of each argument of ``exe``'s signature (None when not a tensor)."""
    from oxla.ir import types as T

    out: list[Any] = []
    for t in getattr(getattr(exe, "signature", None), "inputs", ())[:count]:
        et = getattr(t, "element_type", None) if isinstance(t, T.TensorType) else None
        if isinstance(et, T.QuantizedType):
            et = et.storage_type
        try:
            out.append(None if et is None else np.dtype(et.dtype))
        except (AttributeError, TypeError, NotImplementedError):
            out.append(None)
    return out + [None] * (count - len(out))


def check_output_path(path: str, results: int) -> None:
    """Raises :class:`OxlaError` when ``path`` ends in ``.npy`` but the program has other
    than one result (a ``.npy`` file holds one array)."""
    if path.endswith(".npy") and results != 1:
        raise OxlaError(f"-o {path}: a .npy file holds one array and the program has "
                        f"{results} results; write an .npz archive (-o {path[:-4]}.npz)")


def write_results(path: str, outs: list[np.ndarray]) -> None:
    """Writes ``outs`` to exactly ``path``: a ``.npy`` file when ``path`` ends in
    ``.npy`` and there is one result, else an ``.npz`` archive (result0, result1, ...)
    whatever the suffix (``np.savez`` would append ``.npz`` to a path).

    Raises:
        OxlaError: a ``.npy`` path for other than one result (:func:`check_output_path`).
    """
    check_output_path(path, len(outs))
    with open(path, "wb") as fh:
        if path.endswith(".npy"):
            np.save(fh, outs[0], allow_pickle=False)
        else:
            np.savez(fh, **{f"result{i}": o for i, o in enumerate(outs)})


@click.command("run", epilog=HELP_EPILOG)
@click.argument("artifact", metavar="ARTIFACT.oxla", type=InputPath())
@click.option("--input", "-i", "inputs", multiple=True, metavar="FILE.npy",
              help="one .npy file per argument, in order")
@click.option("--output", "-o", type=click.Path(), default=None,
              help="write the results to exactly this path: an .npz archive (result0, "
                   "result1, ...), or a plain .npy when the program has one result (a "
                   ".npy path for several results is an error)")
@click.option("--require-signature-key-file", "key_file", type=click.Path(dir_okay=False),
              default=None,
              help="refuse the artifact unless it is signed with the key in this file "
                   "(default: the key in $OXLA_REQUIRE_SIGNATURE_KEY, when set)")
def run_command(artifact: str, inputs: tuple[str, ...], output: str | None,
                key_file: str | None) -> None:
    """Run a compiled artifact on .npy inputs; print each output's shape and dtype.

    An artifact is native code: run only artifacts you trust, as you would a shared
    library, or require a signature.
    """
    import os

    import oxla
    from oxla.artifact import key_from_env, load_key

    if output is not None and any(os.path.realpath(output) == os.path.realpath(p)
                                  for p in (artifact, *inputs)):
        raise OxlaError(f"--output {output} would overwrite an input; choose another path")
    key = load_key(key_file, "signature key") if key_file else \
        key_from_env("OXLA_REQUIRE_SIGNATURE_KEY")
    exe = oxla.load(artifact, require_signature=key)
    signature = getattr(exe, "signature", None)
    if output is not None and signature is not None:  # before the run, not after it
        check_output_path(output, len(signature.outputs))
    args = [_load_input(p) for p in inputs]
    args = [reinterpret_input(a, w) for a, w in zip(args, _expected_dtypes(exe, len(args)))]
    t0 = time.perf_counter()
    outs = [np.asarray(o) for o in exe(*args)]
    seconds = time.perf_counter() - t0
    for i, o in enumerate(outs):
        click.echo(f"result{i}: shape {tuple(o.shape)} dtype {o.dtype}")
    click.echo(f"ran in {seconds * 1e3:.3f} ms on backend {exe.backend}")
    if output is not None:
        write_results(output, outs)
        click.echo(f"wrote {output}")
