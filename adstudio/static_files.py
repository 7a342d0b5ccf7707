"""What ``collectstatic`` collects: Django's staticfiles app without the files no page
links. drf-spectacular-sidecar ships ReDoc beside Swagger UI; only Swagger UI is routed
(``/api/docs/``), and ReDoc's bundle and source map were 10 of the 25 MB collected, each
hashed and compressed again at every deploy and reload of a web host."""

from django.contrib.staticfiles.apps import StaticFilesConfig


class StaticFiles(StaticFilesConfig):
    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "redoc"]
