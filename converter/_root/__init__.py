"""poolir: convert, run, inspect and verify CNNs between ONNX and OpenVINO-style IR.

This folder is the `poolir` package itself (pyproject.toml maps it here); its three subpackages are the
repository's top-level folders: `poolir.ir` (ir/), `poolir.runtime` (runtime/), `poolir.converter` (converter/).

    from poolir import ir, runtime, converter
"""
