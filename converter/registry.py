"""The converter registries' import-time checks, shared by both directions (onnx_to_ir/, ir_to_onnx/).

Each direction keeps one registry per operator family (a dict: type -> converter) and one table of the
types it does not convert, each with the reason. `merge_families` joins the families, refusing a type
registered twice; `check_coverage` refuses a known type that has neither a converter nor a reason, a
type with both, and a converter or reason for a type the tables do not know. Every failure names the
type, so a forgotten converter is an import error, not a user's bug report.
"""

from __future__ import annotations

from typing import Iterable, Mapping, TypeVar

Converter = TypeVar("Converter")


class RegistryError(RuntimeError):
    """The converter registries disagree with each other or with the tables they cover (a bug in poolir)."""


def merge_families(what: str, families: Mapping[str, Mapping[str, Converter]]) -> dict[str, Converter]:
    """One registry from the families' registries (family name -> its dict); a type in two families fails."""
    merged: dict[str, Converter] = {}
    owner: dict[str, str] = {}
    for family, converters in families.items():
        for type_name, converter in converters.items():
            if type_name in merged:
                raise RegistryError(f"{what} {type_name} has a converter in two families: {owner[type_name]} "
                                    f"and {family}")
            merged[type_name] = converter
            owner[type_name] = family
    return merged


def check_coverage(what: str, known: Iterable[str], converters: Mapping[str, object],
                   not_converted: Mapping[str, str], known_as: str) -> None:
    """Every type in `known` has a converter or a reason in `not_converted`, never both, and neither registry
    names a type outside `known`. `what` names the types ("IR layer type"), `known_as` the table that
    knows them ("a schema in ir.schema"). Raises RegistryError naming every offending type."""
    known = set(known)
    problems = []
    missing = sorted(known - set(converters) - set(not_converted))
    if missing:
        problems.append(f"{what} {', '.join(missing)}: no converter, and not listed as not convertible with a "
                        "reason")
    both = sorted(set(converters) & set(not_converted))
    if both:
        problems.append(f"{what} {', '.join(both)}: a converter, and listed as not convertible too")
    unknown = sorted((set(converters) | set(not_converted)) - known)
    if unknown:
        problems.append(f"{what} {', '.join(unknown)}: a converter or a reason, but no {known_as}")
    blank = sorted(name for name, reason in not_converted.items() if not reason.strip())
    if blank:
        problems.append(f"{what} {', '.join(blank)}: listed as not convertible without a reason")
    if problems:
        raise RegistryError("; ".join(problems))
