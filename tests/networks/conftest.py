"""The networks built once per test module, shared by test_peers.py and test_poolir_runs.py."""

import pytest

from tests.networks import torchvision


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """build(name, style) -> the model (ModelProto, or the path of a .onnx with external data), built once."""
    folder = tmp_path_factory.mktemp("networks")
    cache = {}

    def build(name: str, style: str):
        if (name, style) not in cache:
            cache[name, style] = torchvision.build(name, style, seed=0, folder=folder)
        return cache[name, style]

    return build
