"""The Kafka protocol, whole: its fields (``fields.py``) and every family, in emission order.

Import ``KAFKA`` from here: each family module registers its families on it when
imported, and the order of these imports is the registry's order.
"""

from __future__ import annotations

# isort: off
from . import controller  # noqa: F401 - elect, shrink the ISR, fail over, elect uncleanly
from . import leadership  # noqa: F401 - become leader, become follower
from . import leader  # noqa: F401 - write, advance the HWM, shrink and expand the ISR
from . import follower  # noqa: F401 - fetch
from . import brokers  # noqa: F401 - broker crashes and restarts
from . import producer  # noqa: F401 - the producer's answers, timeouts and retries
from . import consumer  # noqa: F401 - a consumer group member: fetch, process, commit, crash
# isort: on
from .fields import KAFKA

__all__ = ["KAFKA"]
