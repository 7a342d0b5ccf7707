"""Readable JSON for admin pages: payloads, tool calls and tool results, pretty-printed."""

from __future__ import annotations

import json

from django.utils.html import format_html
from django.utils.safestring import SafeString


def pretty_json(value: object) -> SafeString:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)
