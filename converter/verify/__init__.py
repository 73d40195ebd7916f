"""Verification: prove, output by output, that a model means the same on every path it can take.

    report = verify_paths(["examples/"], peers=("onnxruntime",))
    report.passed            # every row matched (or was an expected refusal)
    report.to_dict()         # the --json schema

    paths.py      which engines run which form of a model (the paths), and what each produced
    compare.py    tolerances, and one output of one path compared with its reference (a Row)
    locate.py     the first node where a path diverges (tensors matched by name, streamed in chunks)
    report.py     the report of every model and path, and its JSON form
    examples.py   example folders: manifest.json, inputs.npz / expected.npz, finding them
    driver.py     verify_model / verify_example / verify_paths: the above, put together
"""

from poolir.converter.verify.compare import (COMPUTED_AS, DEFAULT_TOLERANCES, EXACT, Mismatch, Row, Tolerance,
                                             ToleranceOptions, compare, tolerance_for)
from poolir.converter.verify.locate import Divergence, Location
from poolir.converter.verify.driver import verify_example, verify_model, verify_path, verify_paths
from poolir.converter.verify.examples import (DEFAULT_EXAMPLES, EXAMPLE_MODELS, Manifest, expand, find_examples,
                                              is_example, load_arrays, read_manifest)
from poolir.converter.verify.paths import PEERS, PathOutcome, check_peers, ir_paths, onnx_paths
from poolir.converter.verify.report import ModelReport, Report

__all__ = [
    "COMPUTED_AS", "DEFAULT_EXAMPLES", "DEFAULT_TOLERANCES", "Divergence", "EXACT", "EXAMPLE_MODELS", "Location",
    "Manifest", "Mismatch", "ModelReport", "PEERS", "PathOutcome", "Report", "Row", "Tolerance", "ToleranceOptions",
    "check_peers", "compare", "expand", "find_examples", "ir_paths", "is_example", "load_arrays",
    "onnx_paths", "read_manifest", "tolerance_for",
    "verify_example", "verify_model", "verify_path", "verify_paths",
]
