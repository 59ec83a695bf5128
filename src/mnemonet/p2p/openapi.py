"""The OpenAPI document of a node's client API, generated from the method registry.

One path per client method (``POST /v1/<name>``, plus one per alias) with its
argument and result schemas taken from the interfaces (``p2p/methods.py``), the
bearer-token security scheme, and the error answers every call may give.
"""

from __future__ import annotations

from typing import Any

from mnemonet.p2p.methods import MethodSpec, method_spec
from mnemonet.p2p.registry import ALIASES, REGISTRY, SERVER_FILLED

_REF = "#/components/schemas/{model}"
_ERRORS = {
    "400": "Bad input: the message names the argument and what is wrong.",
    "401": "No token, or a wrong, expired or revoked one.",
    "403": "The token lacks the scope, another source without speak-for, or a cross-origin call.",
    "404": "Unknown method.",
    "413": "Body over the size limit.",
    "415": "Body not sent as application/json.",
    "500": "A fault on the node: the message carries the request id to find it in the logs.",
    "503": "No capable peer, a busy node (Retry-After), or a database unavailable (the message names it).",
    "504": "No answer within the request timeout.",
}
_ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "A stable code such as bad_input, forbidden, busy."},
                "message": {"type": "string", "description": "What went wrong and, where it can, the fix."},
                "retry_after": {"type": "number", "description": "Seconds to wait before retrying (busy)."},
            },
        }
    },
}


def _schema(adapter_schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    # Named models go to components once; the pieces refer to them.
    components.update(adapter_schema.pop("$defs", {}))
    return adapter_schema


def arguments_schema(spec: MethodSpec, components: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a method's keyword arguments, as one object."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in spec.signature.parameters.items():
        if name in SERVER_FILLED.get(spec.name, frozenset()):
            continue
        properties[name] = _schema(spec.params[name].json_schema(ref_template=_REF), components)
        if param.default is param.empty:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _operation(spec: MethodSpec, summary: str, components: dict[str, Any]) -> dict[str, Any]:
    result = _schema(spec.result.json_schema(mode="serialization", ref_template=_REF), components)
    responses: dict[str, Any] = {
        "200": {
            "description": "The result.",
            "content": {"application/json": {"schema": {
                "type": "object", "required": ["result"], "properties": {"result": result}}}},
        },
    }
    arguments = arguments_schema(spec, components)
    responses.update({code: {"$ref": f"#/components/responses/E{code}"} for code in _ERRORS})
    return {"post": {
        "operationId": spec.name,
        "summary": summary,
        "description": f"Token scope: `{spec.scope}`.",
        "tags": [spec.scope or ""],
        "security": [{"bearer": []}],
        "requestBody": {
            "required": "required" in arguments,  # an empty body is no arguments
            "content": {"application/json": {"schema": arguments}},
        },
        "responses": responses,
    }}


def openapi_document(version: str) -> dict[str, Any]:
    """The whole document (OpenAPI 3.1)."""
    components: dict[str, Any] = {"Error": _ERROR_SCHEMA}
    paths: dict[str, Any] = {}
    for name, remote in REGISTRY.items():
        if remote.scope is not None:
            paths[f"/v1/{name}"] = _operation(method_spec(name), remote.summary, components)
    for alias, name in ALIASES.items():
        operation = _operation(method_spec(name), f"Same as {name}.", components)
        operation["post"]["operationId"] = alias
        paths[f"/v1/{alias}"] = operation
    paths["/health"] = {"get": {
        "operationId": "health",
        "summary": "State and status of the node; with a read token also members, dependencies and checks.",
        "security": [{}, {"bearer": []}],
        "responses": {
            "200": {"description": "ok or degraded.", "content": {"application/json": {"schema": {"type": "object"}}}},
            "503": {"description": "A dependency is failing.",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
        },
    }}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mnemonet node",
            "version": version,
            "description": "The client API of a mnemonet node: each method takes its keyword arguments as a "
            "JSON object and answers {\"result\": ...} or {\"error\": {\"code\", \"message\"}}. With a cluster "
            "key set, every call needs 'Authorization: Bearer <token>' with the method's scope.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "responses": {f"E{code}": {"description": text, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}} for code, text in _ERRORS.items()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "A client token: run_node.py token create NAME"}},
        },
    }
