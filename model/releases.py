"""Kafka releases and the replication rules each one shipped (``--kafka-version``).

A release is a protocol revision of the published specification plus the rules Kafka
added since, each a switch that the families read through ``fields.py``
(``restart_fencing``, ``strict_min_isr``, ``kraft``, ``stale_epoch_refused``,
``unclean_elections``, ``eligible_leaders``). Where each rule comes from, with the commit
and the pull request, is written down in ``docs/kafka-versions.md``.

The controller is ZooKeeper's to 3.2. From 3.3 (KIP-833) a cluster may run in KRaft
mode instead (``--kraft``), and from 4.0 only in KRaft mode, whose controller may keep
eligible leader replicas (KIP-966, ``--elr``: off by default in 4.0, on for a new 4.1
cluster). In KRaft mode the leader's ISR change is an AlterPartition request (KIP-497).
The default release is the newest modelled one, 4.1 (``DEFAULT``): KRaft with eligible
leader replicas, what a new cluster runs; see docs/kafka-versions.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Release:
    """The rules in force in one Kafka release (a major.minor line; patch releases share them)."""

    version: str
    revision: str  # the published specification's revision: truncation and fencing rules
    restart_fencing: bool = False  # KIP-380 (2.2): broker epochs; a bounce is handled as a failure
    strict_min_isr: bool = False  # KAFKA-15583 (3.7): no HWM advance while the ISR is below min ISR
    kraft: str = "no"  # "no": ZooKeeper only; "optional": --kraft (3.3+, KIP-833); "only": 4.0+
    stale_epoch_refused: bool = False  # KIP-903 (3.5, KRaft): a restarted replica's old broker epoch cannot join the ISR
    kraft_unclean: bool = False  # KAFKA-12670 (3.9): KRaft honours unclean.leader.election.enable
    elr: bool = False  # KIP-966's eligible leader replicas can be switched on (4.0+)
    elr_default: bool = False  # ... and are on for a new cluster of this release (4.1+)
    idempotence_default: bool = False  # KIP-679 (3.0): the producer is idempotent unless its settings conflict

    @property
    def default_kraft(self) -> bool:
        """KRaft unless --kraft/--zookeeper says otherwise: the only mode from 4.0."""
        return self.kraft == "only"

    def default_elr(self, kraft: bool) -> bool:
        """Eligible leader replicas unless --elr/--no-elr says otherwise: a new cluster's (KRaft only)."""
        return self.elr_default and kraft

    def rules(self, kraft: bool) -> list[str]:
        """The rules checked in ZooKeeper or KRaft mode, in the words of the KIPs and JIRAs."""
        words = [_REVISION_WORDS[self.revision]]
        if self.restart_fencing:
            words.append("KIP-380 broker epochs")
        if self.strict_min_isr:
            words.append("strict min ISR (KAFKA-15583)")
        if kraft:
            words.append("AlterPartition with the maximal ISR (KIP-497)")
            if self.stale_epoch_refused:
                words.append("KIP-903 broker epochs in AlterPartition")
            if not self.kraft_unclean:
                words.append("unclean.leader.election.enable ignored (KAFKA-12670)")
        words.append("KRaft controller" if kraft else "ZooKeeper controller")
        return words


_REVISION_WORDS = {
    "hw-truncation": "truncation to the high watermark",
    "kip-101": "KIP-101 leader-epoch truncation",
    "kip-279": "KIP-279 truncation",
    "kip-320": "KIP-320 epoch fencing",
}


def _line(versions: str, revision: str, **rules: Any) -> list[Release]:
    return [Release(v, revision, **rules) for v in versions.split()]


RELEASES: tuple[Release, ...] = (
    *_line("0.10", "hw-truncation"),
    *_line("0.11 1.0 1.1", "kip-101"),
    *_line("2.0", "kip-279"),
    *_line("2.1", "kip-320"),
    *_line("2.2 2.3 2.4 2.5 2.6 2.7 2.8", "kip-320", restart_fencing=True),
    *_line("3.0 3.1 3.2", "kip-320", restart_fencing=True, idempotence_default=True),
    *_line("3.3 3.4", "kip-320", restart_fencing=True, kraft="optional", idempotence_default=True),
    *_line("3.5 3.6", "kip-320", restart_fencing=True, kraft="optional", stale_epoch_refused=True,
           idempotence_default=True),
    *_line("3.7 3.8", "kip-320", restart_fencing=True, strict_min_isr=True, kraft="optional", stale_epoch_refused=True,
           idempotence_default=True),
    *_line("3.9", "kip-320", restart_fencing=True, strict_min_isr=True, kraft="optional", stale_epoch_refused=True,
           kraft_unclean=True, idempotence_default=True),
    *_line("4.0", "kip-320", restart_fencing=True, strict_min_isr=True, kraft="only", stale_epoch_refused=True,
           kraft_unclean=True, elr=True, idempotence_default=True),
    *_line("4.1", "kip-320", restart_fencing=True, strict_min_isr=True, kraft="only", stale_epoch_refused=True,
           kraft_unclean=True, elr=True, elr_default=True, idempotence_default=True),
)
BY_VERSION = {r.version: r for r in RELEASES}
VERSIONS = tuple(BY_VERSION)
NEWEST = RELEASES[-1].version
DEFAULT = NEWEST  # what a new cluster runs today; older releases are checked when named
# patch releases whose rules differ from their line's first release, which the model does not have
PATCH_CHANGES = {
    "2.0": (1, "backported KAFKA-7128 (a follower joins the ISR only once it reached the leader's epoch start), "
               "which the model's 2.0 rules lack; check 2.0 (2.0.0) or 2.1"),
}


def newest_with(revision: str) -> str:
    """The release that ``--protocol`` alone means: the default where it has that revision,
    else the newest release whose truncation rules are ``revision``."""
    if BY_VERSION[DEFAULT].revision == revision:
        return DEFAULT
    return [r.version for r in RELEASES if r.revision == revision][-1]


def find(text: str) -> Release:
    """The release named by ``X.Y`` or ``X.Y.Z`` (a patch release shares its line's rules);
    ValueError, one line, when it is not a modelled release."""
    m = re.fullmatch(r"(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?", text.strip()) if text.isascii() else None
    version = f"{int(m.group(1))}.{int(m.group(2))}" if m else text
    if version in BY_VERSION:
        patch = int(m.group(3) or 0) if m else 0
        if version in PATCH_CHANGES and patch >= PATCH_CHANGES[version][0]:
            raise ValueError(f"Kafka {text.strip()} {PATCH_CHANGES[version][1]}")
        return BY_VERSION[version]
    if m and (int(m.group(1)), int(m.group(2))) > tuple(map(int, NEWEST.split("."))):
        raise ValueError(f"Kafka {version} is newer than the newest modelled release, {NEWEST}")
    raise ValueError(f"{text!r} is not a modelled Kafka release; choose one of {', '.join(VERSIONS)}")
