"""What an ONNX model (or one of its functions) imports: the domains and their opset versions."""

from __future__ import annotations

from poolir.ir.errors import InvalidModelError, printable

DEFAULT_DOMAINS = ("", "ai.onnx")


def imported_opsets(model) -> dict[str, int]:
    """domain -> imported version, with the default domain under "" (whether spelled "" or "ai.onnx").

    A domain imported twice with two versions ("" 17 and "ai.onnx" 1000) has no one reading: refused."""
    opsets: dict[str, int] = {}
    for entry in model.opset_import:
        domain = "" if (entry.domain or "") in DEFAULT_DOMAINS else entry.domain
        version = int(entry.version)
        if opsets.setdefault(domain, version) != version:
            raise InvalidModelError(f"the model imports domain '{printable(domain or 'ai.onnx')}' twice, as opset "
                                    f"{opsets[domain]} and {version}")
    return opsets
