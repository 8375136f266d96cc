"""A real S3-compatible server on 127.0.0.1 for lakes on object storage: moto in server mode.

It runs in a subprocess of its own (``python -m moto.server``) on a free loopback port, with
moto's IAM authentication switched on, so a request signed with wrong credentials is refused as
a real bucket would refuse it. One IAM user with an S3-only policy is created at start; its keys
are the ones tests hand to the code under test, through the usual ``AWS_*`` variables only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import boto3

from flows.cli.prefect_server import die_with_parent

BUCKET = "invarbench-lake"
REGION = "us-east-1"
# The first requests (creating the user, its key and its policy) run before authentication is
# enforced; moto counts them, so this must equal the number of setup calls in start().
_SETUP_CALLS = 3


def free_port() -> int:
    """A TCP port nobody listens on right now, on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    """The running server: its endpoint, the bucket, and the credentials that may use it."""

    endpoint: str
    key_id: str
    secret: str
    proc: subprocess.Popen

    def env(self, **overrides: str) -> dict[str, str]:
        """Environment for a process that uses the bucket: the credentials, nothing else of AWS's.

        Instance metadata is off so that a missing key never makes the SDK probe the network.
        """
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=os.devnull,
                   AWS_SHARED_CREDENTIALS_FILE=os.devnull)
        env.update(overrides)
        return env

    def client(self):
        """A boto3 S3 client with the valid credentials (for checks from the test's side)."""
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)

    def keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` in the bucket."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def lake_config(self, prefix: str) -> dict[str, str]:
        """The ``[warehouse]`` keys of a lake under ``prefix`` in the bucket."""
        return {"lake": f"s3://{BUCKET}/{prefix}", "endpoint_url": self.endpoint, "region": REGION}

    def lake(self, prefix: str) -> str:
        """The lake string the code uses for that prefix (what ``Config.lake_path`` returns)."""
        from tasks.config import Config

        return Config.model_validate({"warehouse": self.lake_config(prefix)}).lake_path


def start(log: Path) -> S3Server:
    """Start moto on a free port, create the user, its key and the bucket; returns when ready."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_CALLS)}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=die_with_parent)  # a test process killed mid-session leaves no server
    deadline = time.monotonic() + 60
    while True:  # a bare TCP connect: an HTTP request would count as one of the setup calls
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION,
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    iam.create_user(UserName="invarbench")
    key = iam.create_access_key(UserName="invarbench")["AccessKey"]
    iam.put_user_policy(UserName="invarbench", PolicyName="lake", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    server = S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"], proc)
    server.client().create_bucket(Bucket=BUCKET)
    return server


def stop(server: S3Server) -> None:
    """Stop the server process (its own session) and wait for it."""
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGTERM)
        try:
            server.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()
