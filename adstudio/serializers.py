"""The base of every serializer that reads a request body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers


class InputSerializer(serializers.Serializer):
    # A body's text fields as the schema says them: JSON strings (DRF's CharField would
    # take {"name": 0} for "0") no longer than their maxLength as sent (DRF measures after
    # trimming the whitespace around them). A comment, not a docstring: the schema would
    # show it as every subclass's description.

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors = {}
            for name, field in self.fields.items():
                value = data.get(field.field_name)
                if not isinstance(field, serializers.CharField) or field.read_only:
                    continue
                if value is not None and not isinstance(value, str):
                    errors[name] = [field.error_messages["invalid"]]
                elif isinstance(value, str) and field.max_length and len(value) > field.max_length:
                    limit = field.error_messages["max_length"]
                    errors[name] = [limit.format(max_length=field.max_length)]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class QueryParameters(serializers.Serializer):
    # A query string read as its schema says it: each parameter at most once, and a
    # parameter that is not free text (a number, a choice) not empty; DRF would take the
    # last of repeated values, and an empty one for one not given.

    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "getlist"):
            errors = {}
            for name, field in self.fields.items():
                values = data.getlist(name)
                if len(values) > 1:
                    errors[name] = ["Give this parameter once."]
                elif values == [""] and not getattr(field, "allow_blank", False):
                    message = field.error_messages.get("blank", field.error_messages["required"])
                    errors[name] = [message]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)
