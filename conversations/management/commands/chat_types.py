"""The JSON Schema of what a ``useChat`` page is sent (``conversations.web.ui_types``):
``make chat-types`` turns it into ``clients/adstudio-chat.ts``."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from conversations.web.ui_types import ChatTypes


class Command(BaseCommand):
    help = "Print the JSON Schema of the chat's metadata, data parts and tools."

    def handle(self, *args, **options) -> None:
        schema = ChatTypes.model_json_schema(mode="serialization")
        self.stdout.write(json.dumps(_types_only(schema), indent=2, sort_keys=True))


def _types_only(schema: Any) -> Any:
    """The schema without pydantic's title and default of each field: a generator would
    make a type of each title (``type Error = string``) and of each reference with a
    default; models keep their titles."""
    if isinstance(schema, list):
        return [_types_only(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned = {key: _types_only(value) for key, value in schema.items()}
    for field in cleaned.get("properties", {}).values():
        if isinstance(field, dict):
            field.pop("title", None)
            field.pop("default", None)
    return cleaned
