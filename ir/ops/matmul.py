"""MatMul-1 and Einsum-7: their schema rows and OpenVINO's shape rules.

OpenVINO's MatMul (its MatMul-1 spec, checked with OpenVINO 2026.4's CPU plugin; pinned in
tests/runtime/test_matmul_family.py):
  1. transpose_a / transpose_b swap the last two axes of an operand of rank >= 2 before the product.
  2. A 1-D operand is a vector whatever its transpose flag: A [K] acts as [1, K], B [K] as [K, 1], and the
     added axis is removed from the result (A [3] with transpose_a=true times B [3, 4] gives [4];
     [3] x [3] gives a scalar []). This is numpy.matmul's (and ONNX MatMul's) rule for 1-D operands.
  3. The batch axes (all but the last two) broadcast numpy-style: [2, 1, 4, 3] x [5, 3, 6] -> [2, 5, 4, 6].
So MatMul with both flags false is exactly ONNX MatMul.

Einsum-7 (attribute `equation`) and ONNX Einsum-12/28 share one reading of the equation, `parse_einsum`, told which
world's rules apply, and one layout, `einsum_terms`, which spells every ellipsis as letters. Where the worlds differ
(each probed: OpenVINO 2026.4 CPU at f32 precision, onnxruntime 1.31; pinned in tests/runtime/test_einsum.py):
  - spaces: ONNX allows U+0020 anywhere; OpenVINO's IR reader refuses them (only its C++ constructor strips them);
  - implicit output: ONNX keeps the labels that occur once in the whole equation; OpenVINO keeps the labels that
    occur in no other term, so 'ii' means the trace in ONNX but the output 'ii' in OpenVINO, which its CPU plugin
    then cannot compile (poolir refuses it, and ONNX -> IR always writes the output explicitly). Both sort the
    labels by ASCII (upper case first) and put an ellipsis first. onnxruntime 1.31 refuses an implicit equation
    whose output keeps an upper-case letter ('aB'); the spec, numpy and OpenVINO give 'Ba', and so does poolir;
  - ellipses: ONNX requires every ellipsis to cover the same number of dims (onnxruntime's shape inference says
    so, and onnxruntime crashes on 0 against 1 dims) and an output ellipsis when the inputs' ellipses cover any
    dim; OpenVINO broadcasts ellipses of different lengths (numpy-style, right-aligned) and sums the ellipsis dims
    an output leaves out;
  - integers: onnxruntime runs int32 and int64 exactly (wrapping); OpenVINO's CPU plugin computes in float32 or
    saturates (int32 [[16777217, 1]] x [[1], [4096]] gives 16781312, not 16781313; int8 [100, 100, 100] sums to
    127), so the IR runtime and both converters refuse integer Einsum;
  - OpenVINO's CPU plugin (its EinsumDecomposition) gets about 1 in 14 random equations whose ellipsis covers 2 or
    more dims wrong or cannot compile them ('...b,...->...b' over [3, 3, 3, 3] and [3, 3, 3] is wrong; '...c,...b
    ->...bc' over [2, 3, 2] and [2, 3, 3] does not compile), never one with a 1-dim ellipsis nor the same equation
    with its ellipsis in letters (700 probes). poolir computes the spec's result; ONNX -> IR spells ellipses out;
  - float16: both engines compute in float32 and round once (bit for bit against poolir on 512-term sums); float64:
    onnxruntime computes in float64, OpenVINO's CPU plugin in float32 (2e-5 off on 512-term sums), poolir in float64.
Both worlds: a label's dims must be equal or 1 across terms (1 broadcasts), equal within one term (a diagonal);
an output label occurs once and in some input term; a term without ellipsis names every dim of its operand.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Sequence

from poolir.ir.attributes import BOOL, STR, Attr, OpVersion
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.model import Dim, Layer, Shape, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, broadcast_shapes

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("MatMul", 1, (Attr("transpose_a", BOOL, False), Attr("transpose_b", BOOL, False)), inputs=(2, 2)),
    OpVersion("Einsum", 7, (Attr("equation", STR),), inputs=(1, None)),
)

SHAPE_RULES = ShapeRules()


def _merge(a: Dim, b: Dim, what: str) -> None:
    if a.is_static and b.is_static and a.min != b.min:
        raise InvalidModelError(what)


@SHAPE_RULES.register("MatMul")
def infer_matmul(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    a, b = inputs
    if a.element_type != b.element_type:
        raise InvalidModelError(f"input element types differ ({a.element_type}, {b.element_type})")
    if not a.shape or not b.shape:
        raise InvalidModelError(f"inputs {shape_str(a.shape)} and {shape_str(b.shape)}: MatMul needs rank >= 1")
    a_shape, b_shape = list(a.shape), list(b.shape)
    if len(a_shape) >= 2 and layer.attrs["transpose_a"]:
        a_shape[-2:] = a_shape[-1], a_shape[-2]
    if len(b_shape) >= 2 and layer.attrs["transpose_b"]:
        b_shape[-2:] = b_shape[-1], b_shape[-2]
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    if a_vector:
        a_shape = [Dim.static(1), *a_shape]
    if b_vector:
        b_shape = [*b_shape, Dim.static(1)]
    _merge(a_shape[-1], b_shape[-2], f"the inner dims differ: {shape_str(a.shape)} x {shape_str(b.shape)} "
                                     f"(transpose_a={layer.attrs['transpose_a']}, "
                                     f"transpose_b={layer.attrs['transpose_b']})")
    try:
        batch = broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    except Exception as error:
        raise InvalidModelError(f"batch axes of {shape_str(a.shape)} and {shape_str(b.shape)} do not broadcast: "
                                f"{getattr(error, 'problem', error)}") from None
    out = [*batch] + ([] if a_vector else [a_shape[-2]]) + ([] if b_vector else [b_shape[-1]])
    return [TensorInfo(a.element_type, tuple(out))]


# -- Einsum -----------------------------------------------------------------------------------------------------

ELLIPSIS = "..."
_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # ASCII order: upper case first, as both worlds sort


@dataclass(frozen=True, slots=True)
class EinsumEquation:
    """An Einsum equation read by one world's rules: one term per operand and the output term, each a tuple of
    labels (a letter, or ELLIPSIS); `explicit` when the equation spelled its output ('->')."""

    terms: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]
    explicit: bool
    world: str

    def text(self) -> str:
        """The explicit spelling, without spaces ('ab,bc->ac'): what both worlds read alike."""
        return ",".join("".join(term) for term in self.terms) + "->" + "".join(self.output)


def parse_einsum(equation: str, world: str) -> EinsumEquation:
    """`equation` read by the rules of `world` ("onnx" or "ir", module docstring); InvalidModelError naming the
    problem, UnsupportedError for an equation OpenVINO's CPU plugin cannot compile."""
    text = equation.replace(" ", "") if world == "onnx" else equation
    if world == "ir" and " " in text:
        raise InvalidModelError(f"equation {equation!r} holds a space, which OpenVINO's IR reader refuses")
    left, arrow, right = text.partition("->")
    if "->" in right:
        raise InvalidModelError(f"equation {equation!r} has more than one '->'")
    terms = tuple(_labels(term, equation) for term in left.split(","))
    if arrow:
        output = _labels(right, equation)
    else:
        output = _implicit_output(terms, world)
    letters = [label for label in output if label != ELLIPSIS]
    repeated = sorted({label for label in letters if letters.count(label) > 1})
    if repeated:
        problem = f"equation {equation!r}: output label {repeated[0]!r} occurs more than once"
        if not arrow:   # only OpenVINO's implicit rule makes one (module docstring)
            raise UnsupportedError(f"{problem} by OpenVINO's implicit-output rule (the labels in no other term), "
                                   "which its CPU plugin cannot compile; spell the output")
        raise InvalidModelError(problem)
    known = {label for term in terms for label in term}
    unknown = [label for label in letters if label not in known]
    if unknown:
        raise InvalidModelError(f"equation {equation!r}: output label {unknown[0]!r} is in no input term")
    return EinsumEquation(terms, output, bool(arrow), world)


def _labels(term: str, equation: str) -> tuple[str, ...]:
    labels, position = [], 0
    while position < len(term):
        if term.startswith(ELLIPSIS, position):
            if ELLIPSIS in labels:
                raise InvalidModelError(f"equation {equation!r}: term {term!r} holds more than one ellipsis")
            labels.append(ELLIPSIS)
            position += 3
        elif term[position] in _LETTERS:
            labels.append(term[position])
            position += 1
        else:
            raise InvalidModelError(f"equation {equation!r}: {term[position]!r} in term {term!r} is neither a "
                                    "letter (A-Z, a-z) nor part of an ellipsis '...'")
    return tuple(labels)


def _implicit_output(terms: tuple[tuple[str, ...], ...], world: str) -> tuple[str, ...]:
    if world == "onnx":     # the labels occurring once in the whole equation
        every = [label for term in terms for label in term]
        kept = [label for label in every if label != ELLIPSIS and every.count(label) == 1]
    else:                   # OpenVINO: each occurrence of a label that no other term holds
        kept = [label for index, term in enumerate(terms) for label in term if label != ELLIPSIS
                and not any(label in other for other_index, other in enumerate(terms) if other_index != index)]
    ellipsis = (ELLIPSIS,) if any(ELLIPSIS in term for term in terms) else ()
    return ellipsis + tuple(sorted(kept))


def einsum_terms(equation: EinsumEquation, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The terms and the output for operands of `ranks`, each ellipsis spelled as letters the equation does not
    use, right-aligned across terms (the last dim an ellipsis covers has one letter in every term), so numpy-style
    broadcasting of ellipsis dims becomes the broadcasting of size-1 labels. InvalidModelError for a rank the
    equation does not fit, or for ellipses the world refuses; UnsupportedError past 52 letters."""
    if len(ranks) != len(equation.terms):
        raise InvalidModelError(f"equation {equation.text()!r} has {len(equation.terms)} input terms for "
                                f"{len(ranks)} inputs")
    covered = []
    for index, (term, rank) in enumerate(zip(equation.terms, ranks)):
        named = len(term) - (ELLIPSIS in term)
        if rank < named or (ELLIPSIS not in term and rank != named):
            raise InvalidModelError(f"input {index} has rank {rank}, but its term {''.join(term)!r} names "
                                    f"{'at least ' if ELLIPSIS in term else ''}{named} dims")
        covered.append(rank - named if ELLIPSIS in term else None)
    lengths = [n for n in covered if n is not None]
    longest = max(lengths, default=0)
    if equation.world == "onnx":
        if len(set(lengths)) > 1:
            raise InvalidModelError(f"the ellipses of equation {equation.text()!r} cover {lengths} dims; ONNX "
                                    "requires every ellipsis to cover the same number")
        if longest and ELLIPSIS not in equation.output:
            raise InvalidModelError(f"the ellipses of equation {equation.text()!r} cover {longest} dims, but the "
                                    "output has no ellipsis (ONNX requires one)")
    free = [letter for letter in _LETTERS if not any(letter in term for term in equation.terms)]
    if longest > len(free):
        raise UnsupportedError(f"equation {equation.text()!r}: its ellipses cover {longest} dims, more than the "
                               f"{len(free)} letters it leaves free")
    spelled = free[:longest]

    def spell(term: tuple[str, ...], length: int) -> str:
        return "".join(label if label != ELLIPSIS else "".join(spelled[longest - length:]) for label in term)

    terms = [spell(term, n or 0) for term, n in zip(equation.terms, covered)]
    return terms, spell(equation.output, longest)


def einsum_shape(terms: Sequence[str], output: str, shapes: Sequence[Shape]) -> Shape:
    """The output dims of spelled terms (einsum_terms) over operands of `shapes`: a label's dims must be equal
    within one term and equal or 1 across terms (1 broadcasts); InvalidModelError naming the label otherwise."""
    dims: dict[str, Dim] = {}
    for index, (term, shape) in enumerate(zip(terms, shapes)):
        own: dict[str, Dim] = {}
        for label, dim in zip(term, shape):
            seen = own.setdefault(label, dim)
            if seen.is_static and dim.is_static and seen.min != dim.min:
                raise InvalidModelError(f"label {label!r} of input {index} stands for dims {seen.min} and "
                                        f"{dim.min} of {shape_str(shape)}: a repeated label needs equal dims")
        for label, dim in own.items():
            if label in dims:
                try:
                    (dims[label],) = broadcast_shapes((dims[label],), (dim,))
                except InvalidModelError:
                    raise InvalidModelError(f"label {label!r} stands for dims {dims[label].min} and {dim.min} "
                                            f"(input {index}): they must be equal, or one of them 1") from None
            else:
                dims[label] = dim
    return tuple(dims[label] for label in output)


@SHAPE_RULES.register("Einsum")
def infer_einsum(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    element_type = inputs[0].element_type
    if any(info.element_type != element_type for info in inputs):
        raise InvalidModelError(f"input element types differ ({', '.join(i.element_type for i in inputs)})")
    if element_type == "boolean":
        raise InvalidModelError("Einsum takes numbers, not booleans")   # OpenVINO: "must be numeric"
    equation = parse_einsum(layer.attrs["equation"], "ir")
    terms, output = einsum_terms(equation, [len(info.shape) for info in inputs])
    return [TensorInfo(element_type, einsum_shape(terms, output, [info.shape for info in inputs]))]


def integer_einsum_problem(element_type: str) -> str:
    """Why integer Einsum is refused (by the IR runtime and both converters; the model itself is valid)."""
    return (f"integer Einsum ({element_type}): OpenVINO's CPU plugin computes it in float32 or saturates (int32 "
            "[[16777217, 1]] x [[1], [4096]] gives 16781312; int8 [100, 100, 100] summed gives 127)")


__all__ = ["ELLIPSIS", "EinsumEquation", "SCHEMA_ROWS", "SHAPE_RULES", "einsum_shape", "einsum_terms",
           "infer_einsum", "infer_matmul", "integer_einsum_problem", "parse_einsum"]
