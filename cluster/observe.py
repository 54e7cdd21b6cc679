"""What a model step changes that a real cluster shows, and the real cluster's value of it.

A step's *footprint* is the observable part of the model's state that the step changes:
the controller's leader, leader epoch, ISR and ELR; a replica's log (record ids and the
epochs they were written in); a leader's high watermark; an acknowledgement. The harness
checks a step by its footprint alone, so that a real broker taking an independent step
earlier than the model (a running follower fetching at once) is no divergence, while a
real cluster that never shows the step's effect, or shows another, is.
"""

from __future__ import annotations

from typing import Any

from isrcheck.model import Action


def _log(state, b: int) -> list[tuple[int, int]]:
    return [(r.id, r.epoch) for r in state.replicas[b].log]


def footprint(before, action: Action, after, elr: bool = False) -> dict[str, Any]:
    """Field name -> the value the model gives it after the step, for each observable field it
    changes; ``elr``: the configuration keeps eligible leader replicas."""
    want: dict[str, Any] = {}
    qb, qa = before.quorum, after.quorum
    if qa != qb or (elr and after.elr != before.elr):  # the controller's state changed: all of it is compared
        want["leader"] = qa.leader
        want["leader epoch"] = qa.leader_epoch
        want["ISR"] = sorted(after.quorum_isr)
        if elr:
            want["ELR"] = sorted(after.elr)
    for b, (rb, ra) in enumerate(zip(before.replicas, after.replicas)):
        if ra.log != rb.log:
            want[f"log of broker {b}"] = _log(after, b)
        if action.name == "LeaderIncHighWatermark" and action.args.get("leader") == b and ra.hw != rb.hw:
            want[f"HWM of broker {b}"] = ra.hw
    for k in sorted(getattr(after, "acked", frozenset()) - getattr(before, "acked", frozenset())):
        want[f"m{k} acknowledged"] = True
    if action.name == "BrokerRestart":
        want[f"broker {action.args['replica']} registered"] = True
    return want


def matches(name: str, wanted: Any, seen: Any) -> bool:
    if seen is None and wanted is not None:
        return False
    if name.startswith("HWM"):
        return seen >= wanted  # a real leader may pass several records at once
    return seen == wanted


def model_snapshot(state, elr: bool) -> dict[str, Any]:
    """Everything observable in a model state: the controller's view and each replica's log,
    log end offset, high watermark and whether it is up."""
    q = state.quorum
    snap: dict[str, Any] = {"leader": q.leader, "leader epoch": q.leader_epoch, "ISR": sorted(state.quorum_isr)}
    if elr:
        snap["ELR"] = sorted(state.elr)
    snap["replicas"] = {b: {"log": _log(state, b), "LEO": len(r.log), "HWM": r.hw, "up": r.alive}
                        for b, r in enumerate(state.replicas)}
    return snap


def real_snapshot(cluster) -> dict[str, Any]:
    """The same of a real cluster, read from the controller's and the brokers' files; a broker
    is "up", "paused" (SIGSTOP) or "down"."""
    q = cluster.quorum()
    snap: dict[str, Any] = {"leader": None, "leader epoch": None, "ISR": []} if q is None else {
        "leader": q.leader, "leader epoch": q.leader_epoch, "ISR": sorted(q.isr), "ELR": sorted(q.elr),
        "last known ELR": sorted(q.last_known_elr)}
    replicas = {}
    for b in range(cluster.spec.rf):
        log = cluster.log(b)
        state = "down" if b in cluster.down else "paused" if b in cluster.paused else "up"
        replicas[b] = {"log": log, "LEO": len(log), "HWM": cluster.hwm(b), "state": state}
    snap["replicas"] = replicas
    return snap
