"""The reference runtime: N-D numpy pooling kernels and executors for ONNX and IR graphs.

    sess = runtime.Session(model)   # ir.Model, onnx.ModelProto or a path to .xml/.onnx; plans once
    outs = sess.run({"x": array})   # -> dict: output name -> np.ndarray
    outs = runtime.run(model, feeds)
"""

from poolir.runtime.program import Program, TensorSpec
from poolir.runtime.session import Session, run

__all__ = ["Program", "Session", "TensorSpec", "run"]
