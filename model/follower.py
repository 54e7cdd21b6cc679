"""A follower fetches: it copies the next record from the replica it believes leads.

It takes ``min(leader's HWM, its new log end)`` as its own HWM. A replica never
fetches from itself; ``kip-320`` fetches only within the same epoch (epoch fencing).
"""

from __future__ import annotations

from .actions import BROKER
from .fields import KAFKA, fenced
from .readings import leads


def _fetch_words(before, after, a) -> str:
    f = a["follower"]
    rec = after.replicas[f].log[-1]
    return (
        f"broker {f} fetches {rec} from broker {a['leader']} at offset {len(after.replicas[f].log) - 1}; "
        f"its HWM becomes {after.replicas[f].hw}"
    )


@KAFKA.family(
    params=(BROKER("follower"), BROKER("leader")),
    describe=_fetch_words,
    short=lambda b, a, p: f"broker {p['follower']} fetches {a.replicas[p['follower']].log[-1]} from {p['leader']}",
)
def FollowerFetch(s, x, follower, leader):
    yield follower != leader
    yield leads(s, leader)
    yield s.leader[follower] == leader
    if fenced(s.cfg):
        yield s.leader_epoch[follower] == s.leader_epoch[leader]
    o = x.length(s.log[follower])
    yield o < x.length(s.log[leader])
    yield o < s.cfg.logsize
    s.log[follower] = x.copy_next(s.log[follower], s.log[leader])
    s.hw[follower] = x.min(s.hw[leader], o + 1)
