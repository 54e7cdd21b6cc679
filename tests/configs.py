"""Configurations that several test modules check."""

from isrcheck.model import REVISIONS, ModelConfig

# The published specification's machine at rf 2, every revision (hw-truncation, kip-101, kip-279, kip-320).
CORE_RF2 = [ModelConfig(rf=2, protocol=p, core=True) for p in REVISIONS]
