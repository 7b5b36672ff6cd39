"""A real S3-compatible server on 127.0.0.1 for the report's object-storage tests: moto's server mode (a
requirements-dev.txt package), started in a ProcessGroup (stopped by PID however the test ends), and what a user
does with it: `aws s3 sync RUN/ s3://BUCKET/PREFIX/run=NAME/`, here with boto3 (which moto brings).

Every address is loopback: the endpoint is given, and the AWS SDK is kept from looking for a region or credentials
anywhere else (the EC2 metadata address is not on this machine)."""

from __future__ import annotations

import sys
from pathlib import Path

from spe_tools.process import ProcessGroup, free_port

ACCESS = {"AWS_ACCESS_KEY_ID": "spe-test", "AWS_SECRET_ACCESS_KEY": "spe-test", "AWS_REGION": "us-east-1",
          "AWS_EC2_METADATA_DISABLED": "true"}


def start_s3(group: ProcessGroup) -> str:
    """moto's S3 on a free loopback port: its endpoint URL."""
    port = free_port()
    group.start("moto-s3", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], port=port,
                deadline_s=60)
    return f"http://127.0.0.1:{port}"


def client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name=ACCESS["AWS_REGION"],
                        aws_access_key_id=ACCESS["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=ACCESS["AWS_SECRET_ACCESS_KEY"])


def upload(s3, run: Path, bucket: str, prefix: str) -> None:
    """Every file of the run directory under `prefix`, as `aws s3 sync` copies it."""
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        s3.upload_file(str(path), bucket, f"{prefix.rstrip('/')}/{path.relative_to(run).as_posix()}")


def spark_conf(endpoint: str) -> list[str]:
    """--spark-conf arguments for the endpoint, as docs/report.md tells a user."""
    settings = {"spark.hadoop.fs.s3a.endpoint": endpoint, "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.endpoint.region": ACCESS["AWS_REGION"]}
    return [arg for key, value in settings.items() for arg in ("--spark-conf", f"{key}={value}")]
