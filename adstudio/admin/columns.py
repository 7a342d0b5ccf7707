"""How the admin's lists show long values, so that a list fits a laptop's screen: dates
short, texts cut, each whole in its tooltip."""

from __future__ import annotations

from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.html import format_html
from django.utils.text import Truncator


def when(value) -> str:
    """A date as lists show it (``Jan 5, 14:03``), the full one in the tooltip."""
    local = timezone.localtime(value)
    return format_html(
        '<span title="{}">{}</span>',
        format_date(local, "Y-m-d H:i:s T"),
        format_date(local, "M j, H:i"),
    )


def shortened(text: str, length: int) -> str:
    """``text`` cut to ``length`` characters, whole in its tooltip."""
    if len(text) <= length:
        return text
    return format_html('<span title="{}">{}</span>', text, Truncator(text).chars(length))
