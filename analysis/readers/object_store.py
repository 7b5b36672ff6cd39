"""Run directories in object storage (`./spe report s3a://BUCKET/PREFIX/ --engine spark`), read through the Spark
session's own Hadoop filesystem: the endpoint and the credentials the Parquet reader uses are the ones the listing
uses, from the same configuration (docs/scale.md, "Runs in object storage").

The layout is what `aws s3 sync RUN/ s3://BUCKET/PREFIX/run=NAME/` makes of compacted runs (`./spe logs compact RUN`
first): a run directory as it is, under a Hive-style `run=NAME` folder that names its records' `run`. A prefix is
either a run itself (it has parquet/) or holds several run=NAME folders, read as one merged report. Of a run's
Parquet files only those its compacted.json counts are read (parts of a compaction cut short are not records yet),
and nothing else of the prefix goes to the Parquet reader. The few small files a report's sections read beside the
records (lab.json, the Collector's access.log and squid.conf, proxy-costs.json, a prefetcher's log) are copied into
a local directory that stands in for the run directory: the sections read them there as they read a local run's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import (
    ACCESS_LOG,
    COLLECTOR_CONF,
    LAB_JSON,
    MULTIPLIER_LOG,
    PARQUET,
    PREFETCH_AGENT_LOG,
    PROXY_COSTS,
)
from spe_tools.rundir.parquet_log import STATE, CompactState, committed_parts

URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
SCHEME = "s3a://"
RUN_FOLDER = "run="
PART = re.compile(r"/hour=[^/]+/part-\d+-\d+\.parquet$")


def is_url(text: str) -> bool:
    return bool(URL.match(text))


class StoreError(Exception):
    """The object store could not be read: its one-line reason (no Java stack trace)."""


def store_error(url: str, error: Exception) -> StoreError:
    """A Java exception from Hadoop's S3A filesystem as one line that says what to check."""
    java = getattr(error, "java_exception", None)
    kind = java.getClass().getName() if java is not None else type(error).__name__
    text = str((java.getMessage() if java is not None else error) or "")
    if kind.endswith("UnknownStoreException") or "NoSuchBucket" in text:
        return StoreError(f"the bucket {url.split('/')[2]} does not exist ({url})")
    if kind.endswith("FileNotFoundException"):
        return StoreError(f"{url} does not exist")
    if "No AWS Credentials" in text:
        return StoreError(f"{url}: no AWS credentials found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, "
                          "or the provider chain's other sources)")
    if kind.endswith("AccessDeniedException") or "Status Code: 403" in text:
        return StoreError(f"{url}: access denied (the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                          "or the AWS provider chain)")
    if "Unable to execute HTTP request" in text or kind.endswith("ConnectException"):
        reason = text.split("Unable to execute HTTP request:")[-1].split("(SDK Attempt")[0].strip()
        return StoreError(f"{url}: the object store does not answer ({reason}): check spark.hadoop.fs.s3a.endpoint")
    return StoreError(f"{url}: {text.strip().splitlines()[0][:300] if text.strip() else kind}")


@dataclass
class StoredRun:
    """One run under the prefix: its `run` label, where it is, the Parquet files to read, and the local directory
    holding copies of its small files (`local`, filled by Store.stage)."""

    label: str
    url: str
    parts: list[str]
    state: CompactState
    local: Path
    staged: dict[Path, str] = field(default_factory=dict)  # local copy -> where it is stored
    notes: list[str] = field(default_factory=list)  # what the report could not read, said in it


class Store:
    """Hadoop's FileSystem of a Spark session, through Py4J: list, stat and copy."""

    def __init__(self, spark):
        self.jvm = spark._jvm
        self.conf = spark._jsc.hadoopConfiguration()

    def _call(self, url: str, what):
        from py4j.protocol import Py4JJavaError

        try:
            path = self.jvm.org.apache.hadoop.fs.Path(url)
            return what(path.getFileSystem(self.conf), path)
        except Py4JJavaError as e:
            raise store_error(url, e) from None

    def exists(self, url: str) -> bool:
        return self._call(url, lambda fs, path: fs.exists(path))

    def size(self, url: str) -> int | None:
        return self._call(url, lambda fs, path: fs.getFileStatus(path).getLen() if fs.exists(path) else None)

    def folders(self, url: str) -> list[str]:
        return sorted(str(s.getPath().getName()) for s in self._call(url, lambda fs, path: fs.listStatus(path))
                      if s.isDirectory())

    def files_under(self, url: str) -> list[str]:
        """Every file under `url`, at any depth."""
        def walk(fs, path):
            found, files = [], fs.listFiles(path, True)
            while files.hasNext():
                found.append(str(files.next().getPath()))
            return found
        return self._call(url, walk)

    def copy(self, url: str, dest: Path) -> bool:
        """The file at `url` copied to `dest`; False when there is none."""
        def fetch(fs, path):
            if not fs.exists(path):
                return False
            dest.parent.mkdir(parents=True, exist_ok=True)
            fs.copyToLocalFile(False, path, self.jvm.org.apache.hadoop.fs.Path(dest.as_uri()), True)
            return True
        return self._call(url, fetch)


def run_urls(store: Store, url: str) -> list[tuple[str, str]]:
    """(label, url) of each run under the prefix: the prefix itself when it is a run, else its run=NAME folders."""
    base = url.rstrip("/")
    if store.exists(f"{base}/{PARQUET}"):
        name = base.rsplit("/", 1)[-1]
        return [(unquote(name.removeprefix(RUN_FOLDER)), base)]
    runs = [(unquote(name.removeprefix(RUN_FOLDER)), f"{base}/{name}") for name in store.folders(base)
            if name.startswith(RUN_FOLDER)]
    if not runs:
        raise StoreError(f"{url}: no run there (a run's own {PARQUET}/, or {RUN_FOLDER}NAME/{PARQUET}/ folders of "
                         "compacted runs: docs/scale.md)")
    return runs


def _state(store: Store, run_url: str, scratch: Path) -> CompactState:
    """The run's compacted.json: how far its log was compacted, so which part files hold records."""
    local = scratch / STATE
    if not store.copy(f"{run_url}/{PARQUET}/{STATE}", local):
        raise StoreError(f"{run_url}/{PARQUET}/{STATE} not found: upload a run compacted by ./spe logs compact")
    try:
        return CompactState(**json.loads(local.read_text()))
    except (ValueError, TypeError) as e:
        raise StoreError(f"{run_url}/{PARQUET}/{STATE} cannot be read ({e})") from None
    finally:
        local.unlink()


def stored_run(store: Store, label: str, run_url: str, local: Path) -> StoredRun:
    """A run's Parquet files (those its compacted.json counts) and its small files copied into `local`."""
    local.mkdir(parents=True)
    state = _state(store, run_url, local)
    parts = [p for p in store.files_under(f"{run_url}/{PARQUET}") if PART.search(p)]
    run = StoredRun(label, run_url, committed_parts(parts, state), state, local)
    stage(store, run)
    log_size = store.size(f"{run_url}/{MULTIPLIER_LOG}")
    if log_size is not None and log_size > state.offset:
        run.notes.append(f"{run_url}: its {MULTIPLIER_LOG} holds {log_size - state.offset:,} bytes past what was "
                         f"compacted, not read (./spe logs compact the run before uploading it)")
    return run


def _copy(store: Store, run: StoredRun, relative: str) -> bool:
    url, dest = f"{run.url}/{relative}", run.local / relative
    if not store.copy(url, dest):
        return False
    run.staged[dest] = url
    return True


def stage(store: Store, run: StoredRun) -> None:
    """The files the sections read beside the records, copied into the run's local directory; a note for each
    one the report then goes without."""
    if not _copy(store, run, LAB_JSON):
        run.notes.append(f"{run.url}: no {LAB_JSON}, so no topology: the Collector's hit ratios, the noise floor "
                         "and the prefetch columns are left out")
        return
    _copy(store, run, PROXY_COSTS)
    _copy(store, run, COLLECTOR_CONF)
    lab = LabJson.read(run.local)
    access_log = (lab.collector.access_log if lab else None) or ACCESS_LOG
    if not _copy(store, run, access_log):
        run.notes.append(f"{run.url}: no {access_log}, so the Collector's hit ratios and the prefetch columns are "
                         "left out")
    for spec in (lab.proxies.values() if lab else []):
        if spec.dir:
            _copy(store, run, f"{spec.dir}/{PREFETCH_AGENT_LOG}")


def stored_runs(store: Store, urls: list[str], scratch: Path) -> list[StoredRun]:
    """Every run under the prefixes given, each staged in a directory of `scratch` named by its label (labels are
    the runs' names in a merged report: two alike are a mistake to say, not to number)."""
    found = [(label, url) for prefix in urls for label, url in run_urls(store, prefix)]
    labels = [label for label, _ in found]
    if twice := sorted({label for label in labels if labels.count(label) > 1}):
        raise StoreError(f"two runs named {', '.join(twice)} under {', '.join(urls)}: each run=NAME once")
    return [stored_run(store, label, url, scratch / f"run-{index}" / label)
            for index, (label, url) in enumerate(found)]
