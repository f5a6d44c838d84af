"""Stage 4, templates: mine Drain3 templates from candidate events and deduplicate them across ranks.

Entry point: :func:`mine_templates` (redacted :class:`~diag_service.extract.RawEvent` in,
:class:`TemplateGroup` list out, one group per template with counts, ranks, nodes and first time).
"""

from diag_service.templates.mining import MASKS, TemplateGroup, make_miner, mine_templates

__all__ = ["MASKS", "TemplateGroup", "make_miner", "mine_templates"]
