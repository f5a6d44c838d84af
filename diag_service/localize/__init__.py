"""Stage 6, localize: separate the first real failure from its cascade and decide the diagnosis.

Entry point: :func:`localize` (template groups, signature hits and observations in,
:class:`Localization` out).
"""

from diag_service.localize.root_cause import Localization, combine_hang, combine_pace, combine_retrieval, combine_slow, localize

__all__ = ["Localization", "combine_hang", "combine_pace", "combine_retrieval", "combine_slow", "localize"]
