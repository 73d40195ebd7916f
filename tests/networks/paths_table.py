"""The per-network, per-path table of issue 11: `python -m tests.networks.paths_table [--no-zoo] [NAME ...]`.

Runs the six paths of six_paths.py on every torchvision-shaped network in both exporter styles and on the nine
model-zoo graphs (full size, seeded random weights; a few minutes and a few GB for VGG-19), paths 5-6 on
OpenVINO's IR with f32 weights and again with compress_to_fp16, and prints one markdown table: a cell is
`ok <max abs error>`, `DIFFERS <max abs error> (<outputs>)` or `refused: <poolir's message>`. NAME limits the
rows to networks whose name contains it. Exit status 1 when any cell is not ok.

`--onnx DIR` runs the same paths on every .onnx file in DIR instead (zoo.random_feeds: its data input gets
seeded random numbers in its declared shape and type, a symbolic dim as 1): real exports, such as the torchvision
models that `python -m tests.networks.export_torchvision DIR` writes with PyTorch's two exporters.

It lives beside the tests because it uses their networks and peers (tests/networks), which are not part of the
installed package; test_six_paths.py asserts the same cells.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import onnx

from tests.networks import torchvision, zoo
from tests.networks.six_paths import ONNX_PATHS, OPENVINO_IR_PATHS, onnx_paths, openvino_ir_paths
from tests.networks.test_six_paths import INPUT_SEED

COLUMNS = (*ONNX_PATHS, *(f"{path} f32" for path in OPENVINO_IR_PATHS), *(f"{path} f16" for path in OPENVINO_IR_PATHS))


def _torchvision_cases():
    for name in torchvision.NETWORKS:
        for style in torchvision.styles():
            yield f"{name} ({style})", lambda folder, n=name, s=style: _torchvision(n, s, folder)


def _torchvision(name, style, folder):
    model = torchvision.build(name, style, seed=0, folder=folder)
    return model, torchvision.input_feeds(model, INPUT_SEED)


def _zoo_cases():
    for name in zoo.light_models():
        yield f"zoo {name}", lambda folder, n=name: _zoo(n, folder)


def _zoo(name, folder):
    model = zoo.light_model(name, seed=0)
    path = Path(folder) / f"{name}.onnx"
    onnx.save(model, path)
    return path, zoo.random_feeds(model, INPUT_SEED)


def _file_cases(folder: Path):
    for path in sorted(Path(folder).glob("*.onnx")):
        yield path.stem, lambda _, p=path: (p, zoo.random_feeds(onnx.load(p, load_external_data=False), INPUT_SEED))


def row(make) -> dict[str, str]:
    """The cells of one network: every path, OpenVINO's IR with f32 and with f16 weights."""
    with tempfile.TemporaryDirectory(prefix="poolir-paths-") as folder:
        model, feeds = make(folder)
        outcomes = onnx_paths(model, feeds, Path(folder))
        for form, compress in (("f32", False), ("f16", True)):
            for path, outcome in openvino_ir_paths(model, feeds, Path(folder), compress).items():
                outcomes[f"{path} {form}"] = outcome
    gc.collect()
    return {column: outcomes[column] for column in COLUMNS}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.networks.paths_table", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="only networks whose name contains one of these")
    parser.add_argument("--no-zoo", action="store_true", help="only the torchvision-shaped networks (seconds)")
    parser.add_argument("--onnx", metavar="DIR", type=Path, help="every .onnx file in DIR instead")
    arguments = parser.parse_args(argv)
    if arguments.onnx:
        cases = list(_file_cases(arguments.onnx))
    else:
        cases = list(_torchvision_cases()) + ([] if arguments.no_zoo else list(_zoo_cases()))
    if arguments.names:
        cases = [(label, make) for label, make in cases if any(name in label for name in arguments.names)]
    print("| network | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    failures = 0
    started = time.monotonic()
    for label, make in cases:
        outcomes = row(make)
        failures += sum(not outcome.ok for outcome in outcomes.values())
        print(f"| {label} | " + " | ".join(outcome.cell() for outcome in outcomes.values()) + " |", flush=True)
    print(f"\n{len(cases)} networks x {len(COLUMNS)} paths: {len(cases) * len(COLUMNS) - failures} ok, "
          f"{failures} not ok ({time.monotonic() - started:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
