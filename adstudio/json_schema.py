"""JSON schemas of tool arguments as providers are sent them.

Every request carries every tool's schema, so each token in them is paid on every model
call. ``lean_schema`` keeps what tells the model how to call a tool (types, enums,
descriptions) and drops what only pydantic needs: titles, ``default: null``,
``anyOf [T, null]`` for an optional field (the model omits it instead), ``$defs``
references (nested models are inlined; not every provider resolves references), and the
bounds on numbers, lengths and item counts, which catch a wrong call rather than guide a
right one (the tool still enforces them, with an error that names the field and the
bound, which the model fixes in one step).
``strict_schema`` turns a lean schema into the form OpenAI's strict function calling
accepts. pydantic-ai and openai-agents shape their tool schemas the same way.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

_DEF_KEYS = ("$defs", "definitions")
# Keywords outside the JSON-schema subset OpenAI's strict mode supports.
_NOT_STRICT = ("default", "title")
_NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


class LeanJsonSchema(GenerateJsonSchema):
    """pydantic's generator without titles and with optional fields as their plain type."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if "default" in json_schema and json_schema["default"] is None:
            del json_schema["default"]
        return json_schema

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        return json_schema

    def str_schema(self, schema: core_schema.StringSchema) -> JsonSchemaValue:
        return _without(super().str_schema(schema), "minLength", "maxLength")

    def list_schema(self, schema: core_schema.ListSchema) -> JsonSchemaValue:
        return _without(super().list_schema(schema), "minItems", "maxItems")

    def int_schema(self, schema: core_schema.IntSchema) -> JsonSchemaValue:
        return _without(super().int_schema(schema), *_NUMBER_BOUNDS)

    def float_schema(self, schema: core_schema.FloatSchema) -> JsonSchemaValue:
        return _without(super().float_schema(schema), *_NUMBER_BOUNDS)


def _without(json_schema: JsonSchemaValue, *keys: str) -> JsonSchemaValue:
    for key in keys:
        json_schema.pop(key, None)
    return json_schema


def lean_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The arguments schema of ``model`` as sent to providers (see the module docstring)."""
    return inline_defs(model.model_json_schema(schema_generator=LeanJsonSchema))


def inline_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with every local ``$ref`` replaced by the definition it names.

    pydantic puts nested models (a voice track inside a voice draft) under ``$defs``; some
    providers do not resolve references. A recursive reference cannot be inlined: it is
    replaced by a plain ``{"type": "object"}`` rather than expanded forever. A schema
    with no definitions is returned as it is.
    """
    if not any(key in schema for key in _DEF_KEYS):
        return schema
    definitions: dict[str, Any] = {}
    for key in _DEF_KEYS:
        definitions.update({f"#/{key}/{name}": d for name, d in schema.get(key, {}).items()})
    body = {k: v for k, v in schema.items() if k not in _DEF_KEYS}
    return _resolve(body, definitions, ())


def _resolve(node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_resolve(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref in definitions:
        if ref in seen:
            return {"type": "object"}
        target = _resolve(definitions[ref], definitions, (*seen, ref))
        siblings = {k: _resolve(v, definitions, seen) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}  # a description next to the $ref wins
    return {k: _resolve(v, definitions, seen) for k, v in node.items()}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a lean ``schema`` in OpenAI's strict form: every object closed
    (``additionalProperties: false``) with all its properties required, an optional
    property made nullable instead (the model sends null where it would have omitted it;
    argument models read null as "not given"), and the keywords strict mode refuses left
    out (the tool still validates them)."""
    return _strict(copy.deepcopy(inline_defs(schema)))


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    for key in _NOT_STRICT:
        node.pop(key, None)
    properties = node.get("properties")
    if node.get("type") == "object" or isinstance(properties, dict):
        properties = properties if isinstance(properties, dict) else {}
        required = set(node.get("required", ()))
        for name, prop in properties.items():
            properties[name] = _strict(prop)
            if name not in required:
                properties[name] = _nullable(properties[name])
        node["properties"] = properties
        node["required"] = list(properties)
        node["additionalProperties"] = False
    for key, value in node.items():
        if key != "properties":
            node[key] = _strict(value)
    return node


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    kind = prop.get("type")
    if isinstance(kind, str) and kind != "null":
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        prop["type"] = [*kind, "null"]
    elif kind is None:
        return {"anyOf": [prop, {"type": "null"}]}
    if "enum" in prop and None not in prop["enum"]:
        prop["enum"] = [*prop["enum"], None]
    return prop


def absent_not_default(schema: dict[str, Any]) -> None:
    """A model's ``json_schema_extra`` for shapes the API answers with: a field with a
    default is one an answer may leave out, so it is not required and has no default,
    which readers (openapi-typescript among them) take for "always present"."""
    for field in schema.get("properties", {}).values():
        field.pop("default", None)


def default_unstated(schema: dict[str, Any]) -> None:
    """A field's ``json_schema_extra`` for a default the model need not be told: leaving
    the field out already says it (no overlap, the usual count, the usual provider), so
    ``default`` would be tokens on every call for nothing."""
    schema.pop("default", None)
