"""Shared driver of the fuzz harnesses: atheris (coverage-guided, libFuzzer) when it is
installed, else a plain random-mutation loop over the corpus (no coverage guidance).

A harness is a function ``one_input(data: bytes) -> None`` that raises only for a bug:
any exception other than an :class:`oxla.errors.OxlaError` (a crash, a hang being
caught by libFuzzer's ``-timeout``). With ``OXLA_FUZZ_FINDINGS=DIR`` a bug is written to
``DIR/<kind>-<digest>.{bin,txt}`` (the input, the traceback) and the run goes on, so
a long run counts every distinct bug; without it the first bug stops the run, as
libFuzzer does. Scratch files (libFuzzer's new inputs, the artifact seeds) go under
``OXLA_FUZZ_SCRATCH`` when it is set, else the system's temporary directory.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent


def collecting(one_input: Callable[[bytes], None], kind: str) -> Callable[[bytes], None]:
    """Wraps a harness so that, with ``OXLA_FUZZ_FINDINGS`` set, bugs are recorded
    (one file per distinct place of failure) instead of ending the run."""
    out = os.environ.get("OXLA_FUZZ_FINDINGS")
    if not out:
        return one_input
    Path(out).mkdir(parents=True, exist_ok=True)

    def wrapped(data: bytes) -> None:
        try:
            one_input(data)
        except Exception as exc:  # noqa: BLE001 - every non-oxla exception is a finding
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{type(exc).__name__}@" + ";".join(
                f"{Path(f.filename).name}:{f.lineno}" for f in tb[-3:])
            key = hashlib.sha1(where.encode()).hexdigest()[:12]
            base = Path(out) / f"{kind}-{key}"
            if not base.with_suffix(".txt").exists():
                base.with_suffix(".bin").write_bytes(data)
                base.with_suffix(".txt").write_text(
                    where + "\n" + "".join(traceback.format_exception(exc)))

    return wrapped


def corpus(name: str) -> list[bytes]:
    """The seed inputs of ``fuzz/corpus/<name>/``."""
    d = FUZZ_DIR / "corpus" / name
    return [p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()] if d.is_dir() else []


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    """One random edit: flip, insert, delete or duplicate bytes, or splice in a seed."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i:i] = bytes(rng.choice(b"{}()<>[],:=%@#!\"x0123456789 \n-.") for _ in
                           range(rng.randint(1, 4)))
        elif op == 2 and b:
            del b[i:i + rng.randint(1, 16)]
        elif op == 3 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 64)]
        elif op == 4 and pool:
            other = rng.choice(pool)
            j = rng.randrange(len(other) + 1)
            b[i:] = other[j:]
        elif op == 5 and b:
            b[i:i] = bytes([rng.randrange(256)])
    return bytes(b)


def run(one_input: Callable[[bytes], None], corpus_name: str, argv: list[str]) -> int:
    """Runs the harness under atheris with libFuzzer flags ``argv`` (e.g. ``-runs=N``),
    or, when atheris is missing or ``OXLA_FUZZ_ENGINE=random``, ``-runs=N`` random
    mutations of the corpus. Returns the exit status (0: no bug found)."""
    try:
        if os.environ.get("OXLA_FUZZ_ENGINE") == "random":
            raise ImportError
        import atheris
    except ImportError:
        return _random_run(one_input, corpus_name, argv)
    seeds = FUZZ_DIR / "corpus" / corpus_name
    args = [sys.argv[0], *argv]
    if not any(not a.startswith("-") for a in argv) and seeds.is_dir():
        # libFuzzer writes what it finds into the first directory: a scratch one, so
        # the seeds in the repository stay as they are
        import tempfile

        scratch = tempfile.mkdtemp(prefix=f"oxla-fuzz-{corpus_name}-",
                                   dir=os.environ.get("OXLA_FUZZ_SCRATCH"))
        args += [scratch, str(seeds)]
    atheris.Setup(args, one_input)
    atheris.Fuzz()
    return 0


def _random_run(one_input: Callable[[bytes], None], corpus_name: str,
                argv: list[str]) -> int:
    runs = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("-runs=")), 10000)
    seed = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("-seed=")), 0)
    rng = random.Random(seed)
    pool = corpus(corpus_name) or [b""]
    t0 = time.time()
    for seed_input in pool:
        one_input(seed_input)
    for _ in range(runs):
        one_input(mutate(rng, rng.choice(pool), pool))
    print(f"random-mutation engine (no coverage guidance): Done {runs} runs in "
          f"{time.time() - t0:.0f} second(s)", file=sys.stderr)
    return 0
