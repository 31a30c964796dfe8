"""Alerts arrive where they are configured: a webhook on a loopback HTTP server, e-mail on a loopback
SMTP server; secrets come from the environment and never appear in what is sent or logged."""

from __future__ import annotations

import socketserver
import threading

import pytest

from geomon.monitor import alerts
from geomon_tests.loopback import Webhook, serve

ALERT = alerts.Alert(
    kind="regression",
    title="worldbench: m2 regressed on region_disparity_mean",
    summary="m2 vs predecessor m1: 0.05 → 0.40",
    model="m2",
    suite="worldbench",
    url="http://ui.example/assets/worldbench/disparity?partition=m2",
    numbers={"before": 0.05, "after": 0.4, "p_value": 0.001},
)


@pytest.mark.parametrize("style", ["slack", "json"])
def test_webhook_payloads(monkeypatch, caplog, style):
    state = {"posts": []}
    with serve(Webhook, state) as url:
        secret = f"{url}/services/T000/B000/secret-token"
        monkeypatch.setenv("TEST_HOOK", secret)
        settings = alerts.AlertSettings(webhook_url_env="TEST_HOOK", webhook_style=style)
        assert alerts.send(ALERT, settings) == []
        state["status"] = 500
        failures = alerts.send(ALERT, settings)
    assert failures == ["webhook answered HTTP 500"]
    assert "secret-token" not in caplog.text
    body = state["posts"][0]["body"]
    assert state["posts"][0]["path"] == "/services/T000/B000/secret-token"
    if style == "slack":
        assert body["text"] == "[geomon] worldbench: m2 regressed on region_disparity_mean"
        assert "p_value: 0.001" in body["blocks"][1]["text"]["text"] and ALERT.url in body["blocks"][1]["text"]["text"]
    else:
        assert body["source"] == "geomon" and body["numbers"]["after"] == 0.4 and body["url"] == ALERT.url


class SMTPHandler(socketserver.StreamRequestHandler):
    """Just enough SMTP (RFC 5321) to receive one message."""

    def reply(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())

    def handle(self) -> None:
        box = self.server.box  # type: ignore[attr-defined]
        self.reply("220 loopback ESMTP")
        while line := self.rfile.readline().decode():
            verb = line.strip().split(" ")[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250-loopback")
                self.reply("250 AUTH PLAIN")
            elif verb == "AUTH":
                box["auth"] = line.strip()
                self.reply("235 ok")
            elif verb in ("MAIL", "RCPT", "RSET", "NOOP"):
                box.setdefault("envelope", []).append(line.strip())
                self.reply("250 ok")
            elif verb == "DATA":
                self.reply("354 go on")
                data = []
                while (chunk := self.rfile.readline().decode()) not in (".\r\n", ""):
                    data.append(chunk)
                box["message"] = "".join(data)
                self.reply("250 queued")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not here")


def test_email_alert(monkeypatch):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), SMTPHandler)
    server.box = {}  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SMTP_USER", "geomon")
    monkeypatch.setenv("SMTP_PASSWORD", "hunter2")
    settings = alerts.AlertSettings(
        webhook_url_env="",
        smtp_host="127.0.0.1",
        smtp_port=server.server_address[1],
        smtp_user_env="SMTP_USER",
        smtp_password_env="SMTP_PASSWORD",
        email_to=["oncall@example.org"],
    )
    try:
        assert alerts.send(ALERT, settings) == []
    finally:
        server.shutdown()
        server.server_close()
    box = server.box  # type: ignore[attr-defined]
    assert "Subject: [geomon] worldbench: m2 regressed on region_disparity_mean" in box["message"]
    assert "Open in Dagster: http://ui.example/assets/worldbench/disparity?partition=m2" in box["message"]
    assert any("oncall@example.org" in line for line in box["envelope"])
    assert "hunter2" not in box["message"] and box["auth"].startswith("AUTH PLAIN")


def test_missing_secret_and_unreachable_channel_are_reported(monkeypatch):
    settings = alerts.AlertSettings(webhook_url_env="NOT_SET_ANYWHERE")
    assert alerts.notifiers(settings) == []  # nothing configured: nothing sent, a warning logged
    monkeypatch.setenv("DEAD_HOOK", "http://127.0.0.1:9/hook")
    failures = alerts.send(ALERT, alerts.AlertSettings(webhook_url_env="DEAD_HOOK"))
    assert failures == ["webhook: ConnectionError"]
