"""The S3 storage (django-storages, boto3) of the files the product makes, for several
hosts: any S3-compatible server. An object appears whole when its upload completes, so a
crash mid-upload leaves nothing under its name. Its own module, so a deployment on the file
system never imports boto3."""

from __future__ import annotations

from botocore.config import Config
from storages.backends.s3 import S3Storage

# botocore waits 60 s for a connection and for each read by default: a render or an audio
# request would hang that long on an unreachable bucket. Three attempts in botocore's
# standard retry mode (backoff, and throttling answers retried) before an error is raised.
CLIENT_CONFIG = {
    "connect_timeout": 5,
    "read_timeout": 30,
    "retries": {"max_attempts": 3, "mode": "standard"},
}


class MediaS3Storage(S3Storage):
    def __init__(self, **settings) -> None:
        settings.setdefault("client_config", Config(**CLIENT_CONFIG))
        super().__init__(**settings)
