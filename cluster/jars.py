"""Kafka's release jars, fetched by name from Maven Central with Maven, into a cache outside the checkout.

The releases replayed on are pinned here: the newest patch release of each line that
the harness runs. A line's jars are ``org.apache.kafka:kafka_2.13`` and its runtime
dependencies (ZooKeeper's jars among them for the ZooKeeper-mode lines), plus the logging
binding Kafka's own distribution ships, so that each broker's log says what it did.
The cache is ``$ISRCHECK_KAFKA_CACHE`` or ``~/.cache/isrcheck/kafka``; a release's folder
appears only once whole (fetched into a temporary folder, then renamed). ``fetch-kafka``
(``cli/fetch_kafka.py``) fetches ahead of time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import ClusterError

# the newest patch release of each line replayed on (Maven Central, checked 2026-12-01)
PINNED = {"3.6": "3.6.2", "3.7": "3.7.2", "3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2"}

# the logging binding each line's distribution ships (its libs/ folder): reload4j to 3.9, log4j 2 from 4.0
_LOGGING = {
    3: [("org.slf4j", "slf4j-reload4j", "1.7.36"), ("ch.qos.reload4j", "reload4j", "1.2.25")],
    4: [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")],
}


def cache_root() -> Path:
    return Path(os.environ.get("ISRCHECK_KAFKA_CACHE") or Path.home() / ".cache" / "isrcheck" / "kafka")


def release_for(line: str) -> str:
    """The pinned release of a line ("4.1" -> "4.1.2"); a patch release names its line's pin."""
    key = ".".join(line.split(".")[:2])
    if key not in PINNED:
        raise ClusterError(f"no real-cluster release is pinned for Kafka {line}: the harness runs {', '.join(PINNED)}")
    return PINNED[key]


def _pom(release: str) -> str:
    deps = [("org.apache.kafka", "kafka_2.13", release), *_LOGGING[int(release.split(".")[0])]]
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>isrcheck</groupId><artifactId>kafka-{release}</artifactId><version>1</version>"
        f"<dependencies>{body}</dependencies></project>"
    )


def libs(line: str) -> Path:
    """The folder of the pinned release's jars, fetched on first use."""
    release = release_for(line)
    folder = cache_root() / release / "libs"
    if (folder / f"kafka_2.13-{release}.jar").is_file():
        return folder
    if shutil.which("java") is None:
        raise ClusterError("java is missing: a real Kafka cluster needs a Java 17 runtime")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError("mvn is missing: Kafka's jars are fetched from Maven Central with Maven")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        (Path(tmp) / "pom.xml").write_text(_pom(release))
        out = Path(tmp) / "libs"
        cmd = [mvn, "-q", "-B", "-f", str(Path(tmp) / "pom.xml"), "dependency:copy-dependencies",
               f"-DoutputDirectory={out}", "-DincludeScope=runtime"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"fetching Kafka {release}'s jars with Maven took over 15 minutes") from None
        if done.returncode != 0 or not (out / f"kafka_2.13-{release}.jar").is_file():
            said = next((ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln), "no jar came back")
            raise ClusterError(f"could not fetch Kafka {release}'s jars from Maven Central: {said.strip()[:300]}")
        shutil.rmtree(folder, ignore_errors=True)
        out.rename(folder)
    return folder

