"""The package's code states the control plane its manifest states (the repository checks the
manifest against the emulator's OpenAPI document): the operations it calls, and each type's fields."""

import dataclasses
import json
from importlib import resources
from typing import Any, Dict, List, Literal, Union, get_args, get_origin, get_type_hints

import agent_bridge_testing
from agent_bridge_testing._types import SCHEMAS


def manifest() -> Dict[str, Any]:
    return json.loads(resources.files(agent_bridge_testing).joinpath("control-plane.json").read_text())


def notation(hint: Any) -> str:
    """A type hint in the manifest's notation."""
    names = {cls: name for name, cls in SCHEMAS.items()}
    origin = get_origin(hint)
    if origin is Union:
        inner = [a for a in get_args(hint) if a is not type(None)]
        assert len(inner) == 1, hint
        return notation(inner[0]) + "|null"
    if origin is Literal:
        return f"enum({','.join(get_args(hint))})"
    if origin in (list, List):
        return f"array<{notation(get_args(hint)[0])}>"
    if origin in (dict, Dict):
        value = get_args(hint)[1]
        return "object" if value is Any else f"map<{notation(value)}>"
    if hint is Any:
        return "any"
    if hint in names:
        return f"#{names[hint]}"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}[hint]


def fields_of(cls: type) -> Dict[str, str]:
    """A dataclass's fields as the manifest writes them: `name?` for a field with a default (left out when None)."""
    hints = get_type_hints(cls)
    out = {}
    for field in dataclasses.fields(cls):
        optional = field.default is not dataclasses.MISSING
        text = notation(hints[field.name])
        if optional:  # optional fields are Optional[...] in Python; the document leaves them out instead
            assert text.endswith("|null"), f"{cls.__name__}.{field.name}: an optional field defaults to None"
            text = text[: -len("|null")]
        out[field.name + ("?" if optional else "")] = text
    return out


def test_the_operations_it_calls_are_the_manifests():
    ops = manifest()["operations"]
    assert {k: (v["method"], v["path"], v["status"]) for k, v in ops.items()} == agent_bridge_testing.OPERATIONS


def test_the_request_filter_is_the_manifests_query():
    for op in ("adminSandboxRequests", "adminSandboxHar"):
        assert tuple(manifest()["operations"][op]["query"]) == agent_bridge_testing.FILTER_FIELDS


def test_each_type_has_the_manifests_fields_and_types():
    schemas = manifest()["schemas"]
    assert sorted(SCHEMAS) == sorted(schemas)
    for name, cls in SCHEMAS.items():
        assert fields_of(cls) == schemas[name], name


def test_an_answer_that_is_not_the_documents_is_refused_naming_the_field():
    import pytest

    from agent_bridge_testing import ControlPlaneError
    from agent_bridge_testing._types import SandboxInfo, SandboxRequests, parse

    info = {"id": "sbx_1", "name": "n", "organization_id": "org", "organization_ids": [], "instance_count": 0, "request_count": 0, "created_at": "x"}
    with pytest.raises(ControlPlaneError, match=r"\$\.clock: missing"):
        parse(SandboxInfo, info, "adminGetSandbox")
    request = {"seq": 1, "at": "a", "method": "GET", "path": "/", "route": None, "status": 200, "instance_id": None, "session": None}
    request.update({"key_kind": "admin", "body": None, "ms": 1, "request_id": "r"})
    with pytest.raises(ControlPlaneError, match=r"\$\.requests\[0\]\.key_kind: 'admin' is not one of org, scoped, none"):
        parse(SandboxRequests, {"count": 1, "requests": [request]}, "adminSandboxRequests")
    # A field the document adds later is ignored; one it has is kept.
    parsed = parse(SandboxInfo, {**info, "clock": {"now": "t", "offset_ms": 0}, "later": True}, "adminGetSandbox")
    assert parsed.clock.offset_ms == 0
