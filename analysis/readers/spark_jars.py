"""The jars Spark needs to read `s3a://` prefixes (`./spe report s3a://... --engine spark`), pinned here and nowhere
else: `./spe setup` fetches them from Maven Central into build/spark-jars/ (`python -m analysis.readers.spark_jars`),
and the Spark session adds them (spark.jars) only when a path is in object storage.

PySpark bundles hadoop-client 3.5.0, so the S3A filesystem must be hadoop-aws 3.5.0 (another version's classes do
not link against it), with the compile-scope dependencies of its pom: the AWS SDK v2 bundle and the S3 analytics
accelerator, at the versions hadoop-project 3.5.0 pins. Each jar's SHA-1 is the one Maven Central publishes beside
it, written down here: a download that does not hash to it is deleted, never used. A jar once verified is not hashed
again while its size and modification time stay those recorded in the directory's stamp (the SDK bundle is 686 MB:
seconds of hashing on every `./spe setup`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
JAR_DIR = Path(__file__).resolve().parents[2] / "build" / "spark-jars"
STAMP = ".verified.json"  # file name -> [size, mtime_ns] of the jars whose hash matched
BLOCK = 1 << 20


@dataclass(frozen=True)
class Jar:
    group: str
    artifact: str
    version: str
    sha1: str  # Maven Central's published .sha1

    @property
    def name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    def url(self, repository: str = MAVEN_CENTRAL) -> str:
        return f"{repository}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.name}"


HADOOP_VERSION = "3.5.0"  # PySpark's hadoop-client (requirements-dev.txt pins the PySpark)
JARS = (
    Jar("org.apache.hadoop", "hadoop-aws", HADOOP_VERSION, "9e594525d264c0db653c7f68da98b245f7d61ea5"),
    Jar("software.amazon.awssdk", "bundle", "2.35.4", "7252265e3970b214708e68a8b74a8fa8c875af1e"),
    Jar("software.amazon.s3.analyticsaccelerator", "analyticsaccelerator-s3", "1.3.1",
        "6c9bd0f6c440c9a78e82d272f5f0252d942419f6"),
)


class MissingJarsError(Exception):
    """The S3A jars are not in build/spark-jars/ (or not the verified ones)."""


def _stamp(directory: Path) -> dict[str, list[int]]:
    try:
        return json.loads((directory / STAMP).read_text())
    except (OSError, ValueError):
        return {}


def _signature(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def verified(jar: Jar, directory: Path = JAR_DIR) -> bool:
    """The jar is there, unchanged since its hash matched."""
    path = directory / jar.name
    return path.exists() and _stamp(directory).get(jar.name) == _signature(path)


def jar_paths(directory: Path = JAR_DIR, jars: tuple[Jar, ...] = JARS) -> list[Path]:
    """The jars for spark.jars, or MissingJarsError naming the fix."""
    missing = [jar.name for jar in jars if not verified(jar, directory)]
    if missing:
        raise MissingJarsError(f"reading s3a:// needs {', '.join(missing)} in {directory} (the S3A filesystem's "
                               "jars): ./spe setup fetches them")
    return [directory / jar.name for jar in jars]


def _sha1(path: Path) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    with path.open("rb") as f:
        while block := f.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, dest: Path) -> None:
    """The jar into `dest`, through a temporary file: an interrupted download never looks like a jar."""
    partial = dest.with_name(dest.name + ".part")
    with urllib.request.urlopen(url, timeout=60) as reply, partial.open("wb") as f:
        shutil.copyfileobj(reply, f, BLOCK)
    os.replace(partial, dest)


def fetch(directory: Path = JAR_DIR, log=print, jars: tuple[Jar, ...] = JARS, repository: str = MAVEN_CENTRAL) -> None:
    """Every jar there and verified: those missing or changed downloaded and checked against their SHA-1."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = _stamp(directory)
    for jar in jars:
        if verified(jar, directory):
            continue
        path, url = directory / jar.name, jar.url(repository)
        if not path.exists():
            start = time.monotonic()
            log(f"fetching {url}")
            _download(url, path)
            log(f"  {path.stat().st_size / 1e6:,.0f} MB in {time.monotonic() - start:.0f} s")
        found = _sha1(path)
        if found != jar.sha1:
            path.unlink()
            raise MissingJarsError(f"{url}: SHA-1 {found}, expected {jar.sha1} (deleted; run again)")
        stamp[jar.name] = _signature(path)
        (directory / STAMP).write_text(json.dumps(stamp, indent=1))


def main() -> int:
    try:
        fetch(log=lambda line: print(f"spe: {line}", file=sys.stderr))
    except (OSError, MissingJarsError) as e:
        print(f"spe: error: the S3A jars: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
