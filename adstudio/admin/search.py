"""Admin search by id: staff paste an id from the API, a log line, a draft's ``voiceId`` or
a short id from a list, and find the row."""

from __future__ import annotations

import re
import uuid

from django.db.models import CharField, UUIDField
from django.db.models.functions import Cast

SHORT_ID = re.compile(r"[0-9a-fA-F]{8}")  # the first eight hex digits, as lists show ids
MAX_BIGINT = 2**63 - 1


class SearchByIdMixin:
    """A ModelAdmin mixin: the row's own id finds it, besides what ``search_fields``
    match. For UUID keys a whole UUID, or its first eight hex digits; for integer keys
    the number."""

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if isinstance(queryset.model._meta.pk, UUIDField):
            by_id = self._by_uuid(queryset, term)
        elif term.isascii() and term.isdigit() and int(term) <= MAX_BIGINT:
            by_id = queryset.filter(pk=int(term))
        else:
            by_id = None
        return (results if by_id is None else results | by_id), may_have_duplicates

    @staticmethod
    def _by_uuid(queryset, term: str):
        try:
            return queryset.filter(pk=uuid.UUID(term))
        except ValueError:
            pass
        if SHORT_ID.fullmatch(term):
            by_prefix = (
                queryset.model.objects.alias(id_text=Cast("pk", CharField()))
                .filter(id_text__startswith=term.lower())
                .values("pk")
            )
            return queryset.filter(pk__in=by_prefix)
        return None
