"""Structural checks of an artifact's object code before LLVM's loader sees it.

LLVM's object reader trusts its input: a few random bytes after an ELF magic crash the
process (a segfault, not an error). :func:`check_object` reads the ELF64 relocatable
file's headers, sections, symbol table and relocations with ``struct`` and refuses
anything out of bounds, so that a damaged or crafted ``program.o`` is one
:class:`~oxla.errors.OxlaError` line. It does not make untrusted code safe to run:
well-formed machine code can do anything a shared library can (see the README).
"""

from __future__ import annotations

import struct

from oxla.errors import OxlaError

_MACHINES = {"x86_64": 62, "aarch64": 183, "arm64": 183}
_SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 3, 4, 8, 9
_SHF_EXECINSTR = 0x4
_STT_FUNC = 2
# what LLVM emits for the cpu backend's code: anything else is refused (LLVM's own
# reader asserts on, or misreads, e.g. a TLS or common symbol with alignment 0)
_SECTION_TYPES = frozenset({0, 1, 2, 3, 4, 8, 9, 14, 15, 17,
                            0x70000000, 0x70000001, 0x70000003, 0x6FFF4C03})
_SECTION_FLAGS = 0x1 | 0x2 | 0x4 | 0x10 | 0x20 | 0x40 | 0x200 | 0x10000000
_SYMBOL_TYPES = frozenset({0, 1, 2, 3, 4})  # notype, object, func, section, file
_SHN_ABS = 0xFFF1
_MAX_SECTIONS = 1 << 16
_MAX_NAME = 4096
# relocation types of the large code model the cpu backend compiles for (ELF psABI
# numbers); LLVM's linker asserts, not errs, when a 32-bit one does not fit
_RELOCS = {
    62: frozenset({1, 24, 25, 28, 29, 31}),  # 64 PC64 GOTOFF64 GOTPCREL64 GOTPC64 PLTOFF64
    183: frozenset({257, 258, 260, 261, 263, 264, 265, 266, 267, 268, 269, 270, 274, 275,
                    277, 278, 279, 282, 283, 284, 285, 286, 299, 300, 311, 312}),
}
_WIDE = frozenset({1, 24, 25, 28, 29, 31, 257})


def _fail(what: str, why: str) -> OxlaError:
    return OxlaError(f"{what} is not valid object code: {why}")


def check_object(data: bytes, triple: str, what: str = "program.o",
                 need: tuple[str, ...] = ()) -> set[str]:
    """Checks an ELF64 little-endian relocatable object for this target.

    Args:
        data: the file's bytes.
        triple: the target triple the artifact names (its first part picks the machine).
        what: how the object is named in errors.
        need: symbols that must be defined functions in an executable section.

    Returns:
        The names of the global symbols it defines.

    Raises:
        OxlaError: not an ELF64 LE relocatable for the machine, or any header, section,
            name, symbol or relocation out of the file's bounds, or a needed symbol
            missing.
    """
    n = len(data)
    if n < 64 or data[:4] != b"\x7fELF":
        raise _fail(what, "no ELF header")
    if data[4] != 2 or data[5] != 1:
        raise _fail(what, "not a 64-bit little-endian ELF file")
    e_type, e_machine, e_version = struct.unpack_from("<HHI", data, 16)
    phoff, = struct.unpack_from("<Q", data, 32)
    ehsize, _, phnum = struct.unpack_from("<HHH", data, 52)
    if e_version != 1 or ehsize != 64 or phoff or phnum:
        raise _fail(what, "unexpected ELF header fields for a relocatable object")
    machine = _MACHINES.get(triple.split("-", 1)[0])
    if e_type != 1:
        raise _fail(what, f"ELF type {e_type}, expected a relocatable object (1)")
    if machine is None or e_machine != machine:
        raise _fail(what, f"ELF machine {e_machine} does not match target {triple}")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if shentsize != 64 or not 0 < shnum <= _MAX_SECTIONS or shoff + shnum * 64 > n:
        raise _fail(what, "section header table out of bounds")
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
    if sections[0][1] != 0:
        raise _fail(what, "section 0 is not the null section")
    for i, (_, typ, flags, _, off, size, link, _info, align, entsize) in enumerate(sections):
        if typ not in _SECTION_TYPES or flags & ~_SECTION_FLAGS:
            raise _fail(what, f"section {i} has type {typ:#x} and flags {flags:#x}")
        if i and not (0 < align <= 1 << 16 and align & (align - 1) == 0):
            raise _fail(what, f"section {i} has alignment {align}")  # LLVM asserts on it
        if typ != _SHT_NOBITS and off + size > n:
            raise _fail(what, f"section {i} extends past the end of the file")
        if link >= shnum:
            raise _fail(what, f"section {i} links to section {link} of {shnum}")
        if typ in (_SHT_RELA, _SHT_REL, _SHT_SYMTAB) and (
                entsize != (24 if typ != _SHT_REL else 16) or size % entsize):
            raise _fail(what, f"section {i} of {size} bytes has entries of {entsize} bytes")
    if shstrndx >= shnum or sections[shstrndx][1] != _SHT_STRTAB:
        raise _fail(what, "no section name table")

    def name_at(strtab: int, offset: int) -> str:
        _, _, _, _, off, size, *_ = sections[strtab]
        if sections[strtab][1] != _SHT_STRTAB or offset >= size:
            raise _fail(what, "a name lies outside its string table")
        end = data.find(b"\0", off + offset, off + min(size, offset + _MAX_NAME))
        if end < 0:
            raise _fail(what, "an unterminated name")
        return data[off + offset:end].decode("utf-8", "replace")

    for s in sections:
        name_at(shstrndx, s[0])
    symtabs = [i for i, s in enumerate(sections) if s[1] == _SHT_SYMTAB]
    if len(symtabs) != 1:
        raise _fail(what, f"{len(symtabs)} symbol tables, expected 1")
    st = sections[symtabs[0]]
    nsyms = st[5] // 24
    defined: dict[str, tuple[int, int]] = {}
    for k in range(nsyms):
        st_name, st_info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", data,
                                                                     st[4] + 24 * k)
        name = name_at(st[6], st_name) if st_name else ""
        if st_info & 0xF not in _SYMBOL_TYPES or st_info >> 4 > 2 or (
                shndx >= 0xFF00 and shndx != _SHN_ABS):
            raise _fail(what, f"symbol '{name}' has info {st_info:#x} and section {shndx:#x}")
        if st_info & 0xF == 3 and not 0 < shndx < shnum:  # LLVM names it by its section
            raise _fail(what, f"section symbol {k} names section {shndx:#x}")
        if 0 < shndx < 0xFF00:
            if shndx >= shnum:
                raise _fail(what, f"symbol '{name}' in section {shndx} of {shnum}")
            sec = sections[shndx]
            if sec[1] != _SHT_NOBITS and value + size > sec[5]:
                raise _fail(what, f"symbol '{name}' extends past its section")
            if st_info >> 4 and name:  # global or weak
                defined[name] = (st_info & 0xF, shndx)
    allowed = _RELOCS.get(e_machine, frozenset())
    for i, (_, typ, _, _, off, size, link, info, _, entsize) in enumerate(sections):
        if typ not in (_SHT_RELA, _SHT_REL):
            continue
        if link != symtabs[0] or not 0 < info < shnum:
            raise _fail(what, f"relocation section {i} names no symbol table or target")
        target_size = sections[info][5]
        for r in range(size // entsize):
            r_offset, r_info = struct.unpack_from("<QQ", data, off + entsize * r)
            sym, rtype = r_info >> 32, r_info & 0xFFFFFFFF
            width = 8 if rtype in _WIDE else 4
            if sym >= nsyms or r_offset + width > target_size or rtype not in allowed:
                raise _fail(what, f"relocation {r} of section {i} is out of bounds or of "
                                  f"unknown type {rtype}")
    for sym in need:
        kind, shndx = defined.get(sym, (None, 0))
        if kind != _STT_FUNC or not sections[shndx][2] & _SHF_EXECINSTR:
            raise _fail(what, f"it defines no function '{sym}'")
    return set(defined)
