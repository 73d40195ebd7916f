"""Whole-network tests: CNNs in the shapes the classic model zoo and PyTorch's two ONNX exporters write, with
random weights of realistic scale, run by onnxruntime and OpenVINO (and by poolir, once it runs them).

    zoo.py          the nine model-zoo graphs shipped inside the onnx package, with seeded random weights
    builder.py      a small layer over onnx.helper: one network under construction, named as an exporter names it
    layers.py       the layer vocabulary (conv_bn, max_pool, flatten, ...) as each exporter writes it
    torchvision.py  torchvision-shaped networks, each in the "torchscript" and the "dynamo" exporter style
    peers.py        onnxruntime and OpenVINO as oracles, and `agree`, the whole-network tolerance
"""
