"""``oxla compile``: import a model with a frontend, compile it, write a ``.oxla`` file."""

from __future__ import annotations

import os
import time

import click

from oxla import plugins
from oxla.cli.options import InputPath, backend_option, frontend_option
from oxla.errors import PluginError

INSTALL_HINTS: dict[str, str] = {".jaxexport": "jax", ".pt2": "torch", ".onnx": "onnx"}
"""Suffix -> frontend for inputs no installed frontend recognizes; the install command
is :func:`oxla.plugins.install_hint`'s for the frontend's distribution."""


def _install_note(frontend: str) -> str:
    dist = f"oxla-frontend-{frontend}"
    hint = plugins.install_hint(dist)
    return f"install {dist} with: {hint}" if hint.startswith("pip ") else hint


def resolve_frontend(path: str, name: str | None) -> str:
    """Returns the frontend to import ``path`` with: ``name``, else the detected one.

    Raises:
        PluginError: nothing recognizes the file (says which distribution would).
    """
    if name is not None:
        return name
    detected = plugins.detect_frontend(path)
    if detected is not None:
        return detected
    installed = ", ".join(sorted(plugins.frontends())) or "none"
    looks_like = "tf" if os.path.isfile(os.path.join(path, "saved_model.pb")) else next(
        (fe for suffix, fe in INSTALL_HINTS.items() if path.endswith(suffix)), None)
    why = plugins.why_missing("frontend", looks_like) if looks_like else None
    if why is not None:  # installed, but broken or left out: installing again would not help
        raise PluginError(f"'{path}' looks like a {looks_like} model but the {looks_like} "
                          f"frontend is unavailable: {why}")
    if looks_like == "tf":
        raise PluginError(
            f"'{path}' is a TensorFlow SavedModel but the tf frontend is not installed; "
            f"installed: {installed}",
            notes=[_install_note("tf")],
        )
    for suffix, frontend in INSTALL_HINTS.items():
        if path.endswith(suffix):
            raise PluginError(
                f"'{path}' looks like a {frontend} model but the {frontend} frontend is not "
                f"installed; installed: {installed}",
                notes=[_install_note(frontend)],
            )
    if path.endswith(".oxla"):
        raise PluginError(f"'{path}' is already a compiled artifact",
                          notes=[f"run it with: oxla run {path} --input x.npy ..."])
    raise PluginError(
        f"no installed frontend recognizes '{path}'; installed: {installed}",
        notes=["pass --frontend NAME"],
    )


@click.command("compile")
@click.argument("input_path", metavar="IN", type=InputPath())
@frontend_option()
@backend_option(default=None, help="backend to compile for (see `oxla plugins`; default: the "
                "fastest available one that compiles the program: cpu, else the interpreter)")
@click.option("-o", "--output", "output", type=click.Path(), default=None,
              help="the .oxla artifact to write (with --emit stablehlo: the .mlir file; "
                   "default: stdout)")
@click.option("--emit", type=click.Choice(["artifact", "stablehlo", "asm", "llvm"]),
              default="artifact", show_default=True,
              help="write the compiled artifact, the imported StableHLO, or the backend's "
                   "assembly (PTX for cuda, AMDGCN for hip) or LLVM IR")
@click.option("--cuda-arch", default=None, metavar="SM,...",
              help="cuda backend: the archs to make cubins for (sm_80,sm_90; default: the "
                   "current device's, else sm_90)")
@click.option("--hip-arch", default=None, metavar="GFX,...",
              help="hip backend: the archs to make code objects for (gfx90a,gfx942,gfx1100; "
                   "default: the current device's, else gfx942)")
@click.option("--input-spec", "input_specs", multiple=True, metavar="DIMS:TYPE",
              help="concrete shape of an argument, one per argument in order (4x8:f32); "
                   "refines dynamic dims")
@click.option("--params-as-inputs", is_flag=True, default=False,
              help="keep parameters and buffers as leading function arguments instead of "
                   "constants (frontends with parameters: torch)")
@click.option("--mesh", default=None, metavar="AXIS=N,...",
              help="device mesh for sharding, e.g. data=2,model=2")
@click.option("--shard", "shards", multiple=True, metavar="TARGET=SPEC",
              help="annotate a tensor (with --mesh): arg0=data,_ or "
                   "'param:layers.*.mlp.up_proj.weight=model,_' (see README, Sharding)")
@click.option("--explain-sharding", is_flag=True, default=False,
              help="print each op's sharding and each inserted collective with its bytes")
@click.option("--link-gbps", type=float, default=100.0, show_default=True,
              help="link bandwidth for --explain-sharding's communication estimate")
@click.option("--sign-key-file", type=click.Path(dir_okay=False), default=None,
              help="sign the artifact with HMAC-SHA256 using the key in this file "
                   "(default: the key in $OXLA_SIGN_KEY, when set)")
@click.option("--explain-overrides", is_flag=True, default=False,
              help="print each kernel override that fired and where, and why the others "
                   "did not (the first failed constraint)")
@click.option("--verify-overrides", is_flag=True, default=False,
              help="run the program once on random inputs, each overridden subgraph on "
                   "the interpreter beside its kernel; fail on a mismatch beyond the "
                   "kernel's tolerance")
def compile_command(input_path: str, frontend: str | None, backend: str, output: str | None,
                    emit: str, cuda_arch: str | None, hip_arch: str | None,
                    input_specs: tuple[str, ...],
                    params_as_inputs: bool,
                    mesh: str | None, shards: tuple[str, ...], explain_sharding: bool,
                    link_gbps: float, sign_key_file: str | None, explain_overrides: bool,
                    verify_overrides: bool) -> None:
    """Compile a model file or directory (IN) into a .oxla artifact.

    The frontend is detected from IN when --frontend is omitted: .mlir files are
    StableHLO text, .jaxexport files jax.export artifacts, torch.export.save archives
    (.pt2, or any suffix) PyTorch ExportedPrograms, directories holding a saved_model.pb
    TensorFlow SavedModels (--input-spec per input, sorted by name), .onnx files ONNX
    models (--input-spec per graph input, in order, for symbolic dims).
    """
    import oxla
    from oxla.artifact import key_from_env, load_key, sign_artifact
    from oxla.ir import print_module

    if output is not None:
        refuse_overwriting_input(input_path, output)
    key = load_key(sign_key_file, "signing key") if sign_key_file else \
        key_from_env("OXLA_SIGN_KEY")
    name = resolve_frontend(input_path, frontend)
    options: dict[str, object] = {"arg_shapes": list(input_specs)} if input_specs else {}
    if params_as_inputs:
        options["params_as_inputs"] = True
    t0 = time.perf_counter()
    module = plugins.get_frontend(name).import_path(input_path, **options)
    import_s = time.perf_counter() - t0
    report = None
    from oxla.sharding.driver import is_sharded

    if mesh is not None or shards or explain_sharding or is_sharded(module):
        from oxla.sharding.driver import shard_module

        module, report = shard_module(module, mesh, list(shards), link_gbps,
                                      explain=explain_sharding)
    if emit == "stablehlo":
        text = print_module(module)
        if output is None:
            click.echo(text, nl=False)
        else:
            with open(output, "w") as fh:
                fh.write(text)
            click.echo(f"wrote {output} (frontend {name}, {import_s:.3f}s)", err=True)
        return
    if output is None and emit == "artifact":
        output = os.path.splitext(input_path.rstrip("/" + os.sep) or input_path)[0] + ".oxla"
    if output is not None:
        refuse_overwriting_input(input_path, output)
    extra = {"cuda_arch": cuda_arch} if cuda_arch else {}
    if hip_arch:
        extra["hip_arch"] = hip_arch
    exe = oxla.compile(module.clone() if verify_overrides else module, backend=backend,
                       extra=extra)
    if explain_overrides or verify_overrides:
        from oxla.passes.override_compile import explain_lines, verify_on_random_inputs

        if explain_overrides:
            for line in explain_lines(exe.stats.get("overrides")):
                click.echo(line)
        if verify_overrides:
            for line in verify_on_random_inputs(module, exe.backend):
                click.echo(line)
    if emit in ("asm", "llvm"):
        _emit_text(exe, emit, output)
        return
    if report is not None:
        from oxla.sharding.cost import summary

        exe.stats.update(summary(report))
    exe.save(output)
    if report is not None and report.mesh is not None:
        from oxla.sharding.mpi import write_sidecar
        from oxla.sharding.run import _entry

        write_sidecar(output, report, _entry(module))
    if key is not None:
        sign_artifact(output, key)
    compile_s = exe.stats.get("compile_seconds", 0.0)
    sharded = ""
    if report is not None and report.mesh is not None:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(report.counts().items())) or "none"
        sharded = f", per-device program for {report.mesh.num_devices} devices " \
                  f"(collectives: {counts})"
    click.echo(f"wrote {output}: frontend {name}, backend {exe.backend}, "
               f"import {import_s:.3f}s, compile {compile_s:.3f}s{sharded}"
               + (", signed" if key is not None else ""))


def _emit_text(exe, kind: str, output: str | None) -> None:
    """Writes the executable's ``asm``/``llvm`` text (``exe.emit(kind)``) to ``output``
    or stdout.

    Raises:
        OxlaError: the backend does not emit that text.
    """
    from oxla.errors import OxlaError

    if kind == "llvm" and not hasattr(exe, "emit") and hasattr(exe, "llvm_ir"):
        text = exe.llvm_ir
    elif hasattr(exe, "emit"):
        text = exe.emit(kind)
    else:
        raise OxlaError(f"backend '{exe.backend}' does not emit {kind}")
    if output is None:
        click.echo(text, nl=False)
    else:
        with open(output, "w") as fh:
            fh.write(text)


def refuse_overwriting_input(input_path: str, output: str) -> None:
    """Raises :class:`OxlaError` when ``output`` is ``input_path`` (or inside it, for a
    SavedModel directory): writing there would destroy the source.
    """
    from oxla.errors import OxlaError

    src, dst = os.path.realpath(input_path), os.path.realpath(output)
    if dst == src or (os.path.isdir(src) and dst.startswith(src.rstrip(os.sep) + os.sep)) \
            or (os.path.exists(dst) and os.path.samefile(src, dst)):
        raise OxlaError(f"-o {output} would overwrite the input {input_path}; "
                        "choose another output path")
