"""A real S3-compatible server on loopback for the tests and benchmarks of the S3 storage:
moto's server (``moto[server]``), spoken to over HTTP by boto3 as a bucket is. In a thread
of the caller's process (it dies with it), or standalone for processes to share:
``python -m testbed.fake_s3 --port N``."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import uuid

# moto accepts any credentials; boto3 needs some to sign its requests.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
REGION = "us-east-1"


class S3Server:
    """``start()`` it, then ``url`` is its endpoint; ``bucket()`` makes a new bucket.
    ``S3Server(url=...)``: one already running (``python -m testbed.fake_s3``), to talk to."""

    def __init__(self, port: int = 0, *, url: str = "", host: str = "127.0.0.1") -> None:
        self.port = port
        self.url = url
        self.host = host

    def start(self) -> S3Server:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.stop()

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def bucket(self) -> str:
        """A new, empty bucket's name."""
        name = f"adstudio-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket)
        return sorted(entry["Key"] for entry in listed.get("Contents", ()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    server = S3Server(args.port, host=args.host).start()
    print(f"S3 server on {server.url}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    stopped.wait()
    server.stop()


if __name__ == "__main__":
    main()
