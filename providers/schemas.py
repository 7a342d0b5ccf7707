"""Tool schemas as sent on the wire: a stable serialisation (same bytes every turn, so
provider-side prompt caching hits), $defs inlined and the strict form for providers that
need them.
"""

from __future__ import annotations

from typing import Any

from adstudio.json_schema import inline_defs, strict_schema
from providers.base import ToolSpec

__all__ = ["inline_defs", "wire_tools"]

_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
# A spec's strict schema, made once: (the spec's parameters, their strict form). Keeping
# the original object makes its id() safe to key by.
_strict_forms: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}


def _strict_form(parameters: dict[str, Any]) -> dict[str, Any]:
    cached = _strict_forms.get(id(parameters))
    if cached is None or cached[0] is not parameters:
        cached = (parameters, strict_schema(parameters))
        _strict_forms[id(parameters)] = cached
    return cached[1]


def wire_tools(
    tools: tuple[ToolSpec, ...], *, inline: bool, strict: bool = False
) -> list[dict[str, Any]]:
    """Tools in a stable order (by name), schemas optionally inlined or strict.

    The schemas are the specs' own dicts (or their strict form, made once), not copies: a
    payload is only serialised, never changed, so a copy per call would be CPU for nothing.
    """
    wired = []
    for spec in sorted(tools, key=lambda t: t.name):
        parameters = spec.parameters or _NO_PARAMETERS
        if strict:
            parameters = _strict_form(parameters)
        elif inline:
            parameters = inline_defs(parameters)
        function: dict[str, Any] = {
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters,
        }
        if strict:
            function["strict"] = True
        wired.append({"type": "function", "function": function})
    return wired
