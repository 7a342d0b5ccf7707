"""Pages of 50, asked for by ``?page=N``: a page that is not a positive whole number, or
asked for twice, is a 400 rather than silently the first page."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class PageNumbers(PageNumberPagination):
    def get_page_number(self, request, paginator):
        pages = request.query_params.getlist(self.page_query_param)
        if not pages:
            return 1
        if len(pages) > 1 or not pages[0].isascii() or not pages[0].isdigit() or pages[0] == "0":
            raise ValidationError({self.page_query_param: "Must be one whole number from 1."})
        return pages[0]

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
        return parameters
