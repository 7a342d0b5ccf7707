"""Admin search by id: staff paste an id from the API, a log line or a short id from a
list, and find the row."""

from __future__ import annotations

import re
import uuid

from django.db.models import CharField
from django.db.models.functions import Cast

SHORT_ID = re.compile(r"[0-9a-fA-F]{8}")  # the first eight hex digits, as lists show ids


class SearchByIdMixin:
    """A ModelAdmin mixin for models with UUID keys: a whole UUID finds its row, and so do
    its first eight hex digits; other terms search the ``search_fields`` as usual."""

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        try:
            return results | queryset.filter(pk=uuid.UUID(term)), may_have_duplicates
        except ValueError:
            pass
        if SHORT_ID.fullmatch(term):
            by_prefix = (
                queryset.model.objects.alias(id_text=Cast("pk", CharField()))
                .filter(id_text__startswith=term.lower())
                .values("pk")
            )
            return results | queryset.filter(pk__in=by_prefix), may_have_duplicates
        return results, may_have_duplicates
