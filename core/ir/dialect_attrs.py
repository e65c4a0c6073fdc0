"""Dialect attributes: ``#stablehlo<kind VALUE>`` enums, ``#stablehlo.NAME<...>`` structs,
``#stablehlo.conv<...>``, and attributes of unknown dialects (kept verbatim)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oxla.ir import attributes as A

if TYPE_CHECKING:
    from oxla.ir.lexer import Token
    from oxla.ir.parser import Parser


def parse_conv_dims(p: Parser) -> A.ConvDimensionNumbers:
    """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``"""
    tok = p.tok

    def layout(letters: tuple[str, str]):
        p.expect("[")
        slots = []
        while True:
            t = p.advance()
            slots.append(t.text)
            if not p.consume_if(","):
                break
        p.expect("]")
        first = second = -1
        spatial: dict[int, int] = {}
        for i, s in enumerate(slots):
            if s == letters[0]:
                first = i
            elif s == letters[1]:
                second = i
            elif s.isdigit():
                spatial[int(s)] = i
            else:
                raise p.error(f"unexpected '{s}' in convolution dimension numbers", tok)
        if first < 0 or second < 0 or sorted(spatial) != list(range(len(spatial))):
            raise p.error("malformed convolution dimension numbers", tok)
        return first, second, tuple(spatial[k] for k in range(len(spatial)))

    lb, lf, ls = layout(("b", "f"))
    p._expect_x()
    ki, ko, ks = layout(("i", "o"))
    p.expect("->")
    ob, of, os_ = layout(("b", "f"))
    return A.ConvDimensionNumbers(lb, lf, ls, ki, ko, ks, ob, of, os_)




_TYPE_FIELDS = {"lhs_precision_type", "rhs_precision_type", "accumulation_type"}


def _parse_struct_value(p: Parser, key: str):
    if p.at("["):
        p.advance()
        vals = []
        if not p.at("]"):
            while True:
                if p.at("["):
                    vals.append(_parse_struct_value(p, key))
                else:
                    vals.append(p.parse_integer())
                if not p.consume_if(","):
                    break
        p.expect("]")
        return tuple(vals)
    if p.tok.kind == "ident" and p.tok.text in ("true", "false"):
        return p.advance().text == "true"
    if p.tok.kind in ("int", "hex") or p.at("-"):
        save = p.tok.start
        neg = p.consume_if("-")
        if p.tok.kind == "float":
            p.reset_to(save)
            return p.parse_float()
        v = p.parse_integer()
        return -v if neg else v
    if p.tok.kind == "float":
        return p.parse_float()
    if key in _TYPE_FIELDS or p.tok.kind == "ident":
        t = p.parse_optional_type()
        if t is not None:
            return t
        return A.StringAttr(p.advance().text)  # bare enum-like word
    return p.parse_attribute()


def _parse_struct_fields(p: Parser, close: str) -> tuple:
    fields = []
    while not p.at(close):
        key = p.expect_ident("a field name")
        p.expect("=")
        fields.append((key, _parse_struct_value(p, key)))
        if not p.consume_if(","):
            break
    p.expect(close)
    return tuple(fields)


_ENUM_KINDS = {
    "comparison_direction", "comparison_type", "precision", "fft_type", "rng_algorithm",
    "rng_distribution", "transpose", "result_accuracy_mode", "custom_call_api_version",
}


def parse_dialect_attribute(p: Parser, name: str, tok: Token) -> A.Attribute:
    """Reads ``#dialect<...>`` or ``#dialect.mnemonic<...>`` after the ``#name`` token."""
    if name == "stablehlo":
        p.expect("<")
        kind = p.expect_ident("an enum kind")
        value = p.expect_ident("an enum value")
        p.expect(">")
        return A.EnumAttr("stablehlo", kind, value)
    if name == "stablehlo.conv":
        p.expect("<")
        if p.at("raw"):
            p.advance()
            fields = dict(_parse_struct_fields(p, ">"))
            try:
                return A.ConvDimensionNumbers(
                    fields["input_batch_dimension"], fields["input_feature_dimension"],
                    tuple(fields["input_spatial_dimensions"]),
                    fields["kernel_input_feature_dimension"],
                    fields["kernel_output_feature_dimension"],
                    tuple(fields["kernel_spatial_dimensions"]),
                    fields["output_batch_dimension"], fields["output_feature_dimension"],
                    tuple(fields["output_spatial_dimensions"]),
                )
            except KeyError as e:
                raise p.error(f"missing convolution dimension field {e}", tok) from None
        dims = parse_conv_dims(p)
        p.expect(">")
        return dims
    if name.startswith("stablehlo.") and name != "stablehlo.result_accuracy_mode":
        p.expect("<")
        if name == "stablehlo.bounds":
            vals = []
            while not p.at(">"):
                if p.consume_if("?"):
                    vals.append(None)
                else:
                    vals.append(p.parse_integer())
                if not p.consume_if(","):
                    break
            p.expect(">")
            return A.StructAttr(name, (("bounds", tuple(vals)),))
        return A.StructAttr(name, _parse_struct_fields(p, ">"))
    if name.startswith("sdy."):
        from oxla.ir.sdy import parse_sdy_attribute

        return parse_sdy_attribute(p, name, tok)
    # Unknown dialect attribute: keep its exact text.
    return A.OpaqueAttr(tok.text + p._balanced_text())
