"""Telling someone: a webhook (Slack-compatible or generic JSON) and e-mail (SMTP).

An alert says what happened (a regression, drift, a failed run), to which model and suite, the numbers
that moved, and where to look (a link to the asset in the Dagster UI). Where it goes is configured in
geomon.yaml; the secrets (the webhook URL, which carries a token, and the SMTP password) are read from
environment variables whose *names* the file gives, and never appear in logs or metadata.
"""

from __future__ import annotations

import logging
import os
import smtplib
from dataclasses import asdict, dataclass, field
from email.message import EmailMessage
from typing import Any, Literal
from urllib.parse import quote

log = logging.getLogger(__name__)

AlertKind = Literal["regression", "resolved", "drift", "run_failed", "judge_agreement", "blocked_automation", "test"]
NO_CHANNEL = "no channel configured"


@dataclass
class Alert:
    kind: AlertKind
    title: str
    summary: str
    model: str = ""
    suite: str = ""
    url: str = ""  # where to look in the Dagster UI
    numbers: dict[str, Any] = field(default_factory=dict)  # what moved: before, after, effect, p-value, ...

    def text(self) -> str:
        lines = [f"[geomon] {self.title}", self.summary]
        for name, value in self.numbers.items():
            lines.append(f"  {name}: {value:.4g}" if isinstance(value, float) else f"  {name}: {value}")
        if self.url:
            lines.append(f"Open in Dagster: {self.url}")
        return "\n".join(lines)


@dataclass
class AlertSettings:
    webhook_url_env: str = "GEOMON_ALERT_WEBHOOK_URL"  # the variable holding the webhook URL
    webhook_style: Literal["slack", "json"] = "slack"
    smtp_host: str = ""
    smtp_port: int = 25
    smtp_starttls: bool = False
    smtp_user_env: str = ""  # the variable holding the SMTP user name
    smtp_password_env: str = ""  # the variable holding the SMTP password
    email_from: str = "geomon@localhost"
    email_to: list[str] = field(default_factory=list)
    ui_url: str = "http://127.0.0.1:3000"  # links in alerts point here


class AlertError(RuntimeError):
    """An alert could not be delivered (the message names the channel, never its secret)."""


class WebhookNotifier:
    name = "webhook"

    def __init__(self, url: str, style: str = "slack", timeout_s: float = 10.0) -> None:
        self._url = url  # secret: carries the token
        self.style = style
        self.timeout_s = timeout_s

    def payload(self, alert: Alert) -> dict[str, Any]:
        if self.style == "slack":
            # Slack's incoming-webhook format: text as the fallback, blocks for the message itself.
            return {
                "text": f"[geomon] {alert.title}",
                "blocks": [
                    {"type": "header", "text": {"type": "plain_text", "text": f"geomon: {alert.title}"[:150]}},
                    {"type": "section", "text": {"type": "mrkdwn", "text": alert.text()}},
                ],
            }
        return {"source": "geomon", **asdict(alert)}

    def send(self, alert: Alert) -> None:
        import requests  # here, not at the top: loading the code location does not need it (its import time)

        try:
            response = requests.post(self._url, json=self.payload(alert), timeout=self.timeout_s)
        except requests.RequestException as exc:
            raise AlertError(f"webhook: {type(exc).__name__}") from None
        if not response.ok:
            raise AlertError(f"webhook answered HTTP {response.status_code}")


class EmailNotifier:
    def __init__(self, settings: AlertSettings) -> None:
        self.settings = settings
        self.name = f"e-mail to {', '.join(settings.email_to)}"

    def send(self, alert: Alert) -> None:
        s = self.settings
        message = EmailMessage()
        message["Subject"] = f"[geomon] {alert.title}"
        message["From"] = s.email_from
        message["To"] = ", ".join(s.email_to)
        message.set_content(alert.text())
        try:
            with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=30) as smtp:
                if s.smtp_starttls:
                    smtp.starttls()
                if s.smtp_user_env:
                    smtp.login(_secret(s.smtp_user_env), _secret(s.smtp_password_env))
                smtp.send_message(message)
        except (OSError, smtplib.SMTPException) as exc:
            raise AlertError(f"e-mail via {s.smtp_host}:{s.smtp_port}: {type(exc).__name__}: {exc}") from None


def _secret(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise AlertError(f"environment variable {name} is not set")
    return value


def notifiers(settings: AlertSettings) -> list[WebhookNotifier | EmailNotifier]:
    """The channels configured and whose secrets are present in the environment."""
    out: list[WebhookNotifier | EmailNotifier] = []
    url = os.environ.get(settings.webhook_url_env, "") if settings.webhook_url_env else ""
    if url:
        out.append(WebhookNotifier(url, settings.webhook_style))
    if settings.smtp_host and settings.email_to:
        out.append(EmailNotifier(settings))
    return out


def deliver(alert: Alert, settings: AlertSettings) -> list[str]:
    """Deliver ``alert`` on every configured channel; one line per channel ("webhook: sent", "e-mail to …:
    failed: …"), or ``NO_CHANNEL`` when there is none, so metadata and logs never claim an alert went out
    that did not. A failed channel never stops the others, and never fails the run that raised the alert."""
    channels = notifiers(settings)
    if not channels:
        log.warning("alert not delivered, %s (set %s): %s", NO_CHANNEL, settings.webhook_url_env, alert.title)
        return [NO_CHANNEL]
    outcomes = []
    for channel in channels:
        try:
            channel.send(alert)
            outcomes.append(f"{channel.name}: sent")
        except AlertError as exc:
            log.error("alert %r not delivered: %s", alert.title, exc)
            outcomes.append(f"{channel.name}: failed: {exc}")
    return outcomes


def send(alert: Alert, settings: AlertSettings) -> list[str]:
    """``deliver``, returning only what failed (empty when every configured channel took it)."""
    return [o.split(": failed: ", 1)[1] for o in deliver(alert, settings) if ": failed: " in o]


def asset_url(ui_url: str, key: list[str], partition: str | None = None) -> str:
    """The asset's page in the Dagster UI; with ``partition``, that partition's view (its latest materialization
    and checks: the asset's overview would show whichever partition was materialized last)."""
    url = f"{ui_url.rstrip('/')}/assets/{'/'.join(key)}"
    return f"{url}?view=partitions&partition={quote(partition, safe='')}" if partition else url
