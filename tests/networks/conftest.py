"""The `slow` marker: the model-zoo graphs at their full 224x224 size (deselect with -m "not slow")."""


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: a whole model-zoo network at full size (seconds, not milliseconds)")
