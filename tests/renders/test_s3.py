"""Scratch tracks in an S3 bucket, as several hosts keep them: against a real
S3-compatible server on loopback (moto's), spoken to over HTTP by django-storages and boto3
as a deployment with ``MEDIA_S3_BUCKET`` does. Rendered, linked, read whole and by ranges,
made again when an object goes missing, tidied by the sweep, and an unreachable bucket
failing cleanly."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
import soundfile
from django.db.models.functions import Now
from rest_framework.test import APIClient

from renders.models import Render
from renders.recover import render_files_prune, renders_recover
from testbed.fake_s3 import CREDENTIALS, REGION, S3Server
from tests.support.api import api_for

pytestmark = pytest.mark.django_db(transaction=True)


def s3_storage(endpoint: str, bucket: str, **options) -> dict:
    """``STORAGES["default"]`` as ``adstudio.env.media_storage`` makes it, with the test
    server's credentials (a deployment leaves those to boto3's environment)."""
    return {
        "BACKEND": "adstudio.s3_storage.MediaS3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "file_overwrite": True,
            "endpoint_url": endpoint,
            "region_name": REGION,
            "access_key": CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "secret_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            **options,
        },
    }


@pytest.fixture
def bucket(s3_server, settings, tmp_path):
    """A new bucket, the project's storage; nothing may land on the local disk."""
    name = s3_server.bucket()
    settings.MEDIA_ROOT = tmp_path / "local-disk"
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(s3_server.url, name)}
    return name


def every_file(claim: str) -> list[str]:
    """The keys of a claim's files: the mix in three formats, and (the ad has every kind)
    three stems."""
    return sorted(f"{claim}.{fmt}" for fmt in ("ogg", "wav", "mp3", *STEMS))


STEMS = ("voices.wav", "music.wav", "sfx.wav")


def test_a_render_is_stored_in_the_bucket_and_served_whole_and_by_ranges(
    ad, user, bucket, s3_server, tmp_path, tasks_executed
):
    api = api_for(user)
    render_id = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()["id"]
    body = api.get(f"/api/renders/{render_id}").json()

    assert body["status"] == "done"
    assert s3_server.keys(bucket) == every_file(f"renders/{render_id}/1")
    assert not (tmp_path / "local-disk").exists()
    stored = s3_server.client().get_object(Bucket=bucket, Key=f"renders/{render_id}/1.ogg")
    original = stored["Body"].read()
    whole = APIClient().get(body["audioUrl"])
    assert whole.status_code == 200 and b"".join(whole.streaming_content) == original
    samples, rate = soundfile.read(io.BytesIO(original))
    assert rate == 48_000 and abs(len(samples) / rate - body["seconds"]) < 0.05
    part = APIClient().get(body["audioUrl"], HTTP_RANGE="bytes=100-299")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 100-299/{len(original)}"
    assert b"".join(part.streaming_content) == original[100:300]


def test_an_object_missing_from_the_bucket_is_404_and_made_again(
    ad, user, bucket, s3_server, tasks_executed
):
    api = api_for(user)
    render_id = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()["id"]
    body = api.get(f"/api/renders/{render_id}").json()
    s3_server.client().delete_object(Bucket=bucket, Key=f"renders/{render_id}/1.wav")

    missing = APIClient().get(body["wavUrl"])

    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "audio_missing"
    again = api.get(f"/api/renders/{render_id}").json()  # made in-process as it was queued
    assert again["status"] == "done"
    assert s3_server.keys(bucket) == every_file(f"renders/{render_id}/2")  # claim 1's pruned
    assert APIClient().get(again["wavUrl"]).status_code == 200


def test_a_prefix_keeps_the_products_objects_under_it(ad, user, s3_server, settings):
    name = s3_server.bucket()
    settings.STORAGES = {
        **settings.STORAGES,
        "default": s3_storage(s3_server.url, name, location="prod/media"),
    }

    render_id = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}).json()["id"]

    assert s3_server.keys(name) == every_file(f"prod/media/renders/{render_id}/1")


def test_the_sweep_removes_objects_no_render_names(ad, user, bucket, s3_server, monkeypatch):
    monkeypatch.setattr("renders.recover.render_enqueue", lambda render_id: None)
    client = s3_server.client()
    dead = Render.objects.create(
        ad=ad, status="rendering", claims=1, lease_expires_at=Now() - timedelta(seconds=1)
    )
    for key in (f"renders/{dead.pk}/1.ogg", "renders/0b9e8c36-1d5e-4d4c-9a47-7f2b21b0a111/1.ogg"):
        client.put_object(Bucket=bucket, Key=key, Body=b"audio")

    renders_recover()  # the dead claim's object
    assert s3_server.keys(bucket) == ["renders/0b9e8c36-1d5e-4d4c-9a47-7f2b21b0a111/1.ogg"]
    assert render_files_prune() == 1  # a render that does not exist
    assert s3_server.keys(bucket) == []


def test_an_unreachable_bucket_fails_the_render_saying_so(ad, user, settings, s3_server):
    """A bucket on a port nothing listens on: the render fails with the storage's error
    within botocore's bounded retries, rather than staying ``rendering``."""
    closed = S3Server().start()
    url = closed.url
    closed.stop()
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(url, "adstudio-gone")}

    render_id = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}).json()["id"]

    render = Render.objects.get(pk=render_id)
    assert render.status == "failed"
    assert render.error.startswith("The audio could not be stored: ")
    assert "Could not connect to the endpoint URL" in render.error
