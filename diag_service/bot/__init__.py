"""Chatops for incident channels: the Slack app (``/diag JOB_ID``, mentions with log files, Confirm /
Correct buttons) mounted on the service, and proactive hang/slowdown alerts (Slack, Mattermost,
Lark/Feishu), de-duplicated. See ``docs/service.md``."""

from diag_service.bot.alerts import Alert, Notifier, lark_payload, mattermost_payload, slack_payload
from diag_service.bot.blocks import correct_view, diagnosis_blocks, summary_text

__all__ = ["Alert", "Notifier", "correct_view", "diagnosis_blocks", "lark_payload", "mattermost_payload", "slack_payload",
           "summary_text"]
