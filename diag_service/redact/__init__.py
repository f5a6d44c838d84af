"""Stage 2, redact: remove secrets from every line that the service keeps, prints or sends to a model.

Entry points: :func:`redact` (one string) and :func:`redact_events` (candidate events in, the same
events with redacted text out). Lines that are not candidate events are never stored, so redacting
the events is redacting everything the service retains.
"""

from diag_service.redact.secrets import REDACTED, redact, redact_events

__all__ = ["REDACTED", "redact", "redact_events"]
