"""The real engines as test oracles. They live in `converter.peers` (poolir verify --peer uses them
too), so the tests and the product call onnxruntime and OpenVINO with the same settings."""

from poolir.converter.peers import (ONNXRUNTIME_MAX_IR_VERSION, onnxruntime_run, openvino_convert_to_xml,  # noqa: F401
                             openvino_core, openvino_run_onnx, openvino_run_xml)
