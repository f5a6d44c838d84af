"""Fail-hang localisation by temporal stack invariance.

Entry point: :func:`analyze_hang` (:class:`HangRequest` in, :class:`~diag_service.domain.HangReport`
out). Parsers for py-spy (text and ``--json``) and Python ``faulthandler`` dumps are in
:mod:`diag_service.hang.dumps`.
"""

from diag_service.hang.analyzer import HangRequest, analyze_hang, find_dumps_dir
from diag_service.hang.dumps import Frame, ThreadStack, parse_dump

__all__ = ["Frame", "HangRequest", "ThreadStack", "analyze_hang", "find_dumps_dir", "parse_dump"]
