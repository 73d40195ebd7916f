"""Regenerate every example under examples/: models, inputs, expected outputs and manifests.

    python examples/generate.py [--seeds DIR]

Each example is a folder with `model.onnx` and/or `model.xml`, `inputs.npz`, `expected.npz` and a
`manifest.json` that says where the expected values come from. The expected values NEVER come from
poolir (this script does not import it): they are

- the arrays written out in the specification texts (`--seeds`, default `../shared/seeds` beside the
  repository, as the issue names them), parsed from the text itself;
- the ONNX backend node test cases that ship inside the `onnx` package (`onnx.backend.test.case.node`);
- PyTorch's own outputs, for real PyTorch exports (read from tests/converter/data/pytorch_exports, which its
  export.py wrote with torch);
- onnxruntime or OpenVINO at generation time (the manifest records the version);
- small hand-worked cases, worked out in the comments next to their arrays.

Every ONNX example is also run, at generation time, by onnxruntime and by OpenVINO's own ONNX frontend
(`openvino.convert_model`), and the manifest records whether each agrees with the expected values; where
OpenVINO's converter gets the numbers wrong, its output is kept in the manifest to show side by side.

The output is deterministic: the same library versions give the same bytes (npz members carry a fixed
timestamp; models are serialised by onnx and by the fixed XML template in example_cases.py).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np


# The example_* modules beside this file, also when a test loads it by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from example_cases import DEFAULT_SEEDS, EXAMPLES, MAXPOOL_SEED, Example, backend_cases, parse_seed_examples  # noqa: E402,F401
from example_families import (avgpool1_spec_examples, backend_examples, dtype_examples,  # noqa: E402
                              maxpool_seed_examples, network_examples, openvino_converted_examples,
                              pytorch_export_examples, storage_order_example, torch_network_examples,
                              version_examples)
from example_peers import cross_check_onnx  # noqa: E402

# ----------------------------------------------------------------------------------------------------
# Writing


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz (as numpy.savez_compressed writes it) with a fixed timestamp, so that output is reproducible."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def readable_json(value: Any, indent: str = "") -> str:
    """JSON with objects one key a line and lists of numbers (shapes, arrays) kept on one line."""
    if isinstance(value, dict) and value:
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {readable_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value and any(isinstance(v, dict) for v in value):
        inner = indent + "  "
        return "[\n" + ",\n".join(inner + readable_json(v, inner) for v in value) + f"\n{indent}]"
    return json.dumps(value, separators=(", ", ": "))


def write_example(example: Example) -> None:
    folder = EXAMPLES / example.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    models = []
    if example.onnx_model is not None:
        (folder / "model.onnx").write_bytes(example.onnx_model.SerializeToString(deterministic=True))
        models.append("model.onnx")
    if example.ir_xml is not None:
        (folder / "model.xml").write_text(example.ir_xml)
        models.append("model.xml")
    for file_name, data in (example.ir_files or {}).items():
        (folder / file_name).write_bytes(data)
    if example.ir_files:
        models.append("model.xml")
    (folder / "inputs.npz").write_bytes(npz_bytes(example.inputs))
    (folder / "expected.npz").write_bytes(npz_bytes(example.expected))
    manifest = {
        "name": example.name,
        "title": example.title,
        "models": models,
        "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in example.inputs.items()},
        "expected": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in example.expected.items()},
        "expected_source": example.expected_source,
        "tolerance": example.tolerance,
        "expected_refused": example.expected_refused,
        **({"known_deviations": example.known_deviations} if example.known_deviations else {}),
        "cross_checks": example.cross_checks,
        "notes": example.notes,
        "generated_by": "examples/generate.py",
        "generated_with": {p: version(p) for p in ("numpy", "onnx", "onnxruntime", "openvino")},
    }
    (folder / "manifest.json").write_text(readable_json(manifest) + "\n")


def index_markdown(examples: list[Example]) -> str:
    """examples/INDEX.md: every example, where its expected values come from, and what the peers said."""
    lines = ["# Index of the examples", "",
             "Generated by `examples/generate.py` from the manifests; do not edit. \"onnxruntime\" and",
             "\"OpenVINO convert_model\" are the cross-checks made at generation time: the peer run on `model.onnx`",
             "(OpenVINO through its own ONNX frontend), compared with `expected.npz`.", "",
             "| example | model | expected values from | onnxruntime | OpenVINO convert_model |",
             "|---|---|---|---|---|"]
    for example in sorted(examples, key=lambda e: e.name):
        source = example.expected_source
        origin = source["kind"] + (f" `{source['test']}`" if "test" in source else "")
        if source["kind"] == "seed text":
            origin += f" ({source['section'].split(' (')[0]})"
        checks = {c["peer"].split()[0]: c["status"] for c in example.cross_checks}
        lines.append(f"| [{example.name}]({example.name}/manifest.json) | {example.title} | {origin} | "
                     f"{checks.get('onnxruntime', '-')} | {checks.get('openvino', '-')} |")
    return "\n".join(lines) + "\n"


def all_examples(seeds: Path) -> list[Example]:
    backend = backend_cases()
    examples = [*maxpool_seed_examples(seeds, backend), storage_order_example(),
                *avgpool1_spec_examples(seeds), *backend_examples(backend), *version_examples(),
                *dtype_examples(), *openvino_converted_examples(), *network_examples(), *torch_network_examples(),
                *pytorch_export_examples()]
    names = [e.name for e in examples]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SystemExit(f"duplicate example names: {sorted(duplicates)}")
    return examples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=DEFAULT_SEEDS, help="folder of the seed spec texts")
    args = parser.parse_args(argv)
    if not (args.seeds / MAXPOOL_SEED).is_file():
        parser.error(f"seed texts not found in {args.seeds} (give --seeds DIR)")
    examples = all_examples(args.seeds)
    for example in examples:
        if example.onnx_model is not None:
            cross_check_onnx(example)
        write_example(example)
        disagreements = [f"{c['peer']}: {c['status']}" for c in example.cross_checks if c["status"] != "agrees"]
        print(f"{example.name}: {', '.join(example.expected)}" + (f"  [{'; '.join(disagreements)}]"
                                                                   if disagreements else ""))
    (EXAMPLES / "INDEX.md").write_text(index_markdown(examples))
    stale = {p.name for p in EXAMPLES.iterdir() if (p / "manifest.json").is_file()} - {e.name for e in examples}
    for name in sorted(stale):
        shutil.rmtree(EXAMPLES / name)
        print(f"removed stale example {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
