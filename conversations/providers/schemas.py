"""Tool schemas as sent on the wire: a stable serialisation (same bytes every turn, so
provider-side prompt caching hits) and, for providers that need it, $defs inlined.
"""

from __future__ import annotations

from typing import Any

from conversations.providers.base import ToolSpec

_DEF_KEYS = ("$defs", "definitions")


def inline_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with every local ``$ref`` replaced by the definition it names.

    pydantic puts nested models (a voice track inside a voice draft) under ``$defs``; some
    providers do not resolve references. A recursive reference cannot be inlined: it is
    replaced by a plain ``{"type": "object"}`` rather than expanded forever.
    """
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


def wire_tools(tools: tuple[ToolSpec, ...], *, inline: bool) -> list[dict[str, Any]]:
    """Tools in a stable order (by name), schemas optionally inlined.

    The schemas are the specs' own dicts, not copies: a payload is only serialised, never
    changed, and copying every schema on every call was a tenth of the client's CPU.
    """
    wired = []
    for spec in sorted(tools, key=lambda t: t.name):
        parameters = spec.parameters or {"type": "object", "properties": {}}
        if inline:
            parameters = inline_defs(parameters)
        wired.append(
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": parameters,
                },
            }
        )
    return wired
