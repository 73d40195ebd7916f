"""The hand-made hostile files in corpus/: each is refused with the expected error naming the file (and the
layer or node where there is one), by the reader/runtime and by every CLI command. Files that bugs found by
the fuzzers were made from (regressions) are marked; see also the commits that fixed them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from poolir import ir
from poolir import runtime
from poolir.converter.ir_to_onnx import ir_to_onnx
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import ConversionError, InvalidModelError, PoolirError, UnsupportedError
from tests.robustness.cli_check import all_commands
from tests.robustness.harness import survive

CORPUS = Path(__file__).parent / "corpus"
DOCTYPE = "a DOCTYPE or ENTITY declaration is not allowed"
POOL = "layer 'pool' (id 1, AvgPool)"
CONST = "layer 'two' (id 2, Const)"

# file -> (error raised when the model is loaded for a run, text the message must contain)
EXPECTED: dict[str, tuple[type[PoolirError], str]] = {
    "billion_laughs.xml": (InvalidModelError, DOCTYPE),
    "xxe_file_entity.xml": (InvalidModelError, DOCTYPE),
    "xxe_http_entity.xml": (InvalidModelError, DOCTYPE),
    "external_dtd.xml": (InvalidModelError, DOCTYPE),
    "parameter_entity.xml": (InvalidModelError, DOCTYPE),
    "undeclared_entity.xml": (InvalidModelError, "Entity 'ghost' not defined"),
    "xinclude.xml": (InvalidModelError, "XInclude}include> in <layers>"),
    "empty.xml": (InvalidModelError, "the file is empty"),
    "truncated.xml": (InvalidModelError, "malformed XML"),
    "nul_byte_in_xml.xml": (InvalidModelError, "malformed XML: Invalid character"),  # regression: two-line message
    "garbage.xml": (InvalidModelError, "not UTF-8"),
    "utf16.xml": (InvalidModelError, "not UTF-8"),
    "not_net_root.xml": (InvalidModelError, "expected <net>"),
    "cycle.xml": (InvalidModelError, "cycle"),
    "dangling_edge.xml": (InvalidModelError, "no layer with id 9 (a dangling edge)"),
    "duplicate_edge.xml": (InvalidModelError, "two edges into one port"),
    "duplicate_layer_id.xml": (InvalidModelError, "duplicate layer id 1"),
    "wrong_port_count.xml": (InvalidModelError, "layer 'scale' (id 3, Multiply): input port 1 is not connected"),
    # Read, inspected and written as they stand (ir.schema.is_known); run and convert refuse them.
    "unknown_type.xml": (UnsupportedError, "unsupported layer types: NotAnOpenVINOOp-opset1"),
    "unknown_version.xml": (UnsupportedError, "unsupported layer types: AvgPool-opset99"),
    "ir_version_7.xml": (UnsupportedError, "IR version 7"),
    "unknown_element_type.xml": (InvalidModelError, f"{CONST}: attribute 'element_type' = 'f8e4m3'"),
    "zero_stride.xml": (InvalidModelError, f"{POOL}: attribute 'strides' = 0,2"),
    "negative_stride.xml": (InvalidModelError, f"{POOL}: attribute 'strides' = 2,-1"),
    "stride_2_pow_63.xml": (InvalidModelError, f"{POOL}: attribute 'strides' = 1,9223372036854775808"),  # regression
    "negative_pad.xml": (InvalidModelError, f"{POOL}: attribute 'pads_begin' = -1,1"),
    "kernel_larger_than_input.xml": (InvalidModelError, f"{POOL}: spatial axis 1: the dilated kernel 9"),
    "kernel_wrong_length.xml": (InvalidModelError, f"{POOL}: attribute 'kernel' = 3,3,3 has 3 values"),
    "output_size_below_one.xml": (InvalidModelError, f"{POOL}: spatial axis 1: the dilated kernel 8"),
    "unknown_rounding.xml": (InvalidModelError, f"{POOL}: attribute 'rounding_type' = 'round'"),
    "unknown_auto_pad.xml": (InvalidModelError, f"{POOL}: attribute 'auto_pad' = 'notset'"),
    "maxpool_bad_index_type.xml": (InvalidModelError, "attribute 'index_element_type' = 'f32'"),
    "maxpool_axis_out_of_range.xml": (InvalidModelError, "attribute 'axis' = 7"),
    "const_offset_negative.xml": (InvalidModelError, f"{CONST}: Const offset -4"),
    "const_past_eof.xml": (InvalidModelError, f"{CONST}: Const data at offset 2 with size 4 lies past the end"),
    "const_offset_overflow.xml": (InvalidModelError, f"{CONST}: Const data at offset 18446744073709551612"),
    "const_size_not_multiple.xml": (InvalidModelError, f"{CONST}: Const size 3 bytes"),
    "const_missing_bin.xml": (InvalidModelError, "const_missing_bin.bin is missing"),
    "const_huge_shape.xml": (InvalidModelError, f"{CONST}: the Const shape"),
    "parameter_too_large.xml": (InvalidModelError, "the Parameter shape"),
    "output_too_large.xml": (InvalidModelError, f"{POOL}: the inferred output [1,2,70005,70005]"),
    "dynamic_stride_2_pow_63.xml": (InvalidModelError, "layer 'pool' (id 1, MaxPool): attribute 'strides' = "
                                                       "9223372036854775808"),  # regression: ONNX writer overflow
    "gather_empty_axis.xml": (InvalidModelError, "layer 'gather' (id 3, Gather): the Gather axis must be one "
                                                 "integer"),  # regression: IndexError
    "garbage.onnx": (InvalidModelError, "not a readable ONNX model"),
    "onnx_node_without_input.onnx": (InvalidModelError, "node '#0' (AveragePool): input 0 of AveragePool-"),  # regression
    "onnx_op_type_not_utf8.onnx": (UnsupportedError, "unsupported operators"),  # regression: convert, verify
    "empty.onnx": (InvalidModelError, "the file is empty"),
    "onnx_negative_pads.onnx": (InvalidModelError, "node 'pool' (MaxPool): attribute 'pads'"),
    "onnx_zero_strides.onnx": (InvalidModelError, "node 'pool' (MaxPool): attribute 'strides'"),
    "onnx_kernel_wrong_length.onnx": (InvalidModelError, "node 'pool' (MaxPool): input rank 4"),
    "onnx_unknown_auto_pad.onnx": (InvalidModelError, "attribute 'auto_pad' = 'SAME'"),
    "onnx_lp_p_zero.onnx": (InvalidModelError, "node 'pool' (LpPool): attribute 'p' = 0"),
    "onnx_storage_order_2.onnx": (InvalidModelError, "attribute 'storage_order' = 2"),
    "onnx_missing_kernel_shape.onnx": (InvalidModelError, "required attribute 'kernel_shape'"),
    "onnx_unsupported_opset.onnx": (UnsupportedError, "opset 99"),
    "onnx_int32_averagepool.onnx": (InvalidModelError, "input type int32 is not allowed for AveragePool"),
    "onnx_output_type_mismatch.onnx": (InvalidModelError, "graph output 'y' is declared int64, and the graph "
                                                          "computes float32"),  # regression: run and convert gave it
    "onnx_ir_version_99.onnx": (UnsupportedError, "ONNX IR version 99 is newer than this onnx package reads"),
}
# Valid models kept because a converter bug was found on them (see test_converter_regressions).
VALID = {"avgpool_include_pad_ceil_pad_end_ge_kernel.onnx", "maxpool_floor_window_in_padding.onnx",
         "avgpool_include_pad_ceil_torch_pad_end_ge_kernel.xml", "huge_kernel_in_padding.xml",
         "onnx_graph_name_not_utf8.onnx"}  # regression: inspect --json


def _models() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".xml", ".onnx"))


def test_every_corpus_file_has_an_expectation():
    assert set(_models()) == set(EXPECTED) | VALID


def _load_and_run(path: Path):
    session = runtime.Session(path)
    feeds = {spec.name: np.zeros([d or 1 for d in spec.shape], spec.dtype) for spec in session.inputs}
    return session.run(feeds)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_is_refused_with_a_located_message(name):
    path = CORPUS / name
    error_type, text = EXPECTED[name]
    error = survive("corpus.load", lambda: _load_and_run(path), names=str(path))
    assert isinstance(error, error_type), f"{name}: expected {error_type.__name__}, got {error!r}"
    assert text in str(error), f"{name}: {error}"
    assert "root:" not in str(error)  # nothing of /etc/passwd leaks into a message


@pytest.mark.parametrize("name", _models())
def test_corpus_file_through_every_command(tmp_path, name):
    all_commands(CORPUS / name, tmp_path)


def test_converter_regressions(tmp_path):
    # AveragePool count_include_pad=1, ceil_mode=1, L=1, k=1, pads (0, 1): ONNX has one window (the second
    # would start in the right padding); the converter wrote a floor AvgPool with two.
    model = onnx.load(CORPUS / "avgpool_include_pad_ceil_pad_end_ge_kernel.onnx")
    x = np.full((1, 1, 1), 5.0, np.float32)
    (converted,) = runtime.run(onnx_to_ir(model), {"x": x}).values()
    np.testing.assert_array_equal(converted, x)  # hand-worked: one window holding the one element, divisor 1
    # MaxPool kernel 1, pads (0, 1), floor: the second window is all padding (ONNX -inf, OpenVINO -3.4e38).
    with pytest.raises(ConversionError, match="node 'pool' \\(MaxPool\\): a window holds no input element"):
        onnx_to_ir(onnx.load(CORPUS / "maxpool_floor_window_in_padding.onnx"))
    # The mirror case, IR -> ONNX: AvgPool-14 exclude-pad=false, ceil_torch, L=1, k=1, pads (0, 1) has one window
    # (OpenVINO drops the one starting in the padding); the converter wrote an ONNX floor AveragePool with two.
    source = CORPUS / "avgpool_include_pad_ceil_torch_pad_end_ge_kernel.xml"
    converted = ir_to_onnx(ir.read_model(source))
    onnx.checker.check_model(converted, full_check=True)
    (y,) = runtime.run(converted, {"x": x}).values()
    np.testing.assert_array_equal(y, x)  # hand-worked: the one window holds the element; divisor prod(k) = 1


def test_huge_kernel_lying_in_the_padding_runs_without_visiting_every_tap():
    # Regression (a hang): AvgPool-16 kernel 2,2,2000000000 with pads_end 1,0,1999999999 on a 3x4x5 input.
    # Hand-worked: exclude-pad=true averages the real elements only, all ones, so every output is 1; the
    # third axis keeps its 5 windows (5 + 1999999999 - 2000000000 + 1), the second has (4 - 2) // 2 + 1 = 2.
    (y,) = runtime.run(CORPUS / "huge_kernel_in_padding.xml", {"x": np.ones((1, 1, 3, 4, 5))}).values()
    np.testing.assert_array_equal(y, np.ones((1, 1, 3, 2, 5)))
