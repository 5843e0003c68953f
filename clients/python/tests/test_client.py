"""The client against a real gateway and the reference tools."""

from __future__ import annotations

import asyncio
import http.server
import threading
import time

import pytest

from recourse_client import AsyncGateway, CallRecord, Gateway, GatewayError, Resends, call_body

from conftest import NO_LOOKUPS, exports_written

EXPORT = {"source_id": "sales-2024", "format": "pdf"}


def test_a_read_succeeds_with_its_record(stack):
    tools, url = stack()
    with Gateway(url) as gateway:
        record = gateway.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"})
    assert record.succeeded, record
    assert record.next.step == "use_result"
    assert record.data["symbol"] == "TSLA"
    assert record.http_calls == 1
    assert record.replayed is False
    assert record.idempotency.from_ == "manifest" and record.idempotency.idempotent
    assert record.attempts[0].action == "succeed"


def test_writes_get_a_key_and_reads_do_not():
    assert "idempotency_key" in call_body({"a": 1}, url="http://h/x")
    assert "idempotency_key" not in call_body({"a": 1}, url="http://h/x", idempotent=True)
    assert "idempotency_key" not in call_body({"a": 1}, url="http://h/x", method="GET")
    assert "idempotency_key" not in call_body({"a": 1}, url="http://h/x", auto_key=False)
    assert call_body({}, url="http://h/x", idempotency_key="mine")["idempotency_key"] == "mine"
    a, b = call_body({}, url="http://h/x"), call_body({}, url="http://h/x")
    assert a["idempotency_key"] != b["idempotency_key"], "a new key for each call"


def test_a_keyed_write_sent_again_is_replayed_not_repeated(stack):
    tools, url = stack("exports:crash_after_commit:1.0", tools_args=NO_LOOKUPS)
    with Gateway(url) as gateway:
        first = gateway.call(f"{tools}/api/exports", EXPORT, idempotency_key="order-7-export")
        second = gateway.call(f"{tools}/api/exports", EXPORT, idempotency_key="order-7-export")
        assert first.outcome == "unknown" and first.next.step == "do_not_repeat", first
        assert (first.replayed, second.replayed) == (False, True)
        assert second.call_id == first.call_id and second.outcome == "unknown"
        with pytest.raises(GatewayError) as refused:
            gateway.call(f"{tools}/api/exports", {**EXPORT, "format": "csv"}, idempotency_key="order-7-export")
    assert refused.value.status == 422 and refused.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert exports_written(tools) == 1


def test_a_lost_answer_is_asked_for_again_with_the_same_key(stack):
    """The client gives up waiting before the write finishes and sends the
    request again: the gateway answers 409 while the first call runs, then its
    record. The tool wrote once."""
    tools, url = stack(
        "exports:slow:1.0", tools_args=("--slow-ms", "1500"), gateway_args=("--lease-ms", "3000")
    )
    resends = Resends(attempts=20, first_wait=0.2, max_wait=0.5)
    with Gateway(url, timeout=0.5, resends=resends) as gateway:
        record = gateway.call(f"{tools}/api/exports", EXPORT)
    assert record.succeeded, record
    assert record.replayed is True, "the record came from the journal, not a second run"
    assert record.idempotency_key is not None
    assert exports_written(tools) == 1


def test_an_unkeyed_request_whose_answer_is_lost_is_not_sent_again(stack):
    tools, url = stack("exports:slow:1.0", tools_args=("--slow-ms", "1000"))
    with Gateway(url, timeout=0.3, auto_key=False) as gateway:
        with pytest.raises(GatewayError) as lost:
            gateway.call(f"{tools}/api/exports", EXPORT)
    assert lost.value.status == 0
    # The request runs on in the gateway; once its journal says it finished,
    # the tool has the one write, and the client sent nothing more.
    with Gateway(url) as reader:
        deadline = time.monotonic() + 15
        while not reader.list_calls(state="succeeded").calls:
            assert time.monotonic() < deadline, "the call never finished"
            time.sleep(0.05)
        assert len(reader.list_calls().calls) == 1, "one request reached the gateway"
    assert exports_written(tools) == 1


def test_get_call_and_reconcile_read_the_journal(stack):
    tools, url = stack("exports:crash_after_commit:1.0", tools_args=NO_LOOKUPS)
    with Gateway(url) as gateway:
        record = gateway.call(f"{tools}/api/exports", EXPORT)
        assert record.outcome == "unknown"
        journaled = gateway.get_call(record.call_id)
        assert journaled.state == "unknown"
        assert isinstance(journaled.record, CallRecord) and journaled.record.call_id == record.call_id
        settled = gateway.reconcile(record.call_id)
        assert settled.state == "unknown", "no lookup was recorded, so it cannot tell; nothing resent"
        page = gateway.list_calls(state="unknown")
        assert [c.call_id for c in page.calls] == [record.call_id]
        assert [c.call_id for c in page] == [record.call_id], "a page iterates over its calls"
        assert len(page) == 1 and page.next_before is None
        with pytest.raises(GatewayError) as missing:
            gateway.get_call("no-such-call")
    assert missing.value.status == 404 and missing.value.code == "CALL_NOT_FOUND"
    assert exports_written(tools) == 1


def test_reconcile_settles_through_the_recorded_lookup(stack):
    tools, url = stack("exports:crash_after_commit:1.0")
    lookup = f"{tools}/api/exports/{{operation_id}}"
    with Gateway(url) as gateway:
        record = gateway.call(f"{tools}/api/exports", EXPORT, reconcile=lookup)
        assert record.succeeded, "the lookup found the write committed"
        settled = gateway.reconcile(record.call_id)
    assert settled.state == "succeeded"
    assert isinstance(settled.record, CallRecord) and settled.record.succeeded
    assert exports_written(tools) == 1


def test_a_token_is_required_when_the_gateway_has_one(stack):
    tools, url = stack(env={"RECOURSE_GATEWAY_TOKEN": "s3cret-token"})
    with Gateway(url) as anonymous, pytest.raises(GatewayError) as refused:
        anonymous.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"})
    assert refused.value.status == 401 and refused.value.code == "UNAUTHORIZED"
    with Gateway(url, token="s3cret-token") as gateway:
        assert gateway.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"}).succeeded


def test_a_gateway_killed_mid_write_answers_the_resend_with_a_record(servers, tmp_path):
    """The gateway is SIGKILLed while a keyed write is at the tool, and
    restarted on the same journal: the client's resend with the same key
    gets a whole record it can read (never a second write), and once the
    sweeper has looked the write up, the record says what settled it."""
    tools = servers("tools", "serve", "--port", "0", "--seed", "7", "--fault", "exports:slow:1.0", "--slow-ms", "1000")
    journal = str(tmp_path / "gateway.db")
    # The lease outlasts the write, so the sweeper's lookup finds it committed.
    gateway_args = ("serve", "--port", "0", "--journal", journal, "--lease-ms", "2000")
    lookup = f"{tools.url}/api/exports/{{key}}"
    key = "order-11-export"
    first = servers(*gateway_args)
    with Gateway(first.url, timeout=0.3, resends=Resends(attempts=1)) as gateway:
        with pytest.raises(GatewayError) as lost:
            gateway.call(f"{tools.url}/api/exports", EXPORT, idempotency_key=key, reconcile=lookup)
    assert lost.value.status == 0, "the answer was lost: the write is still at the tool"
    first.process.kill()
    first.process.wait()

    second = servers(*gateway_args)
    resends = Resends(attempts=30, first_wait=0.2, max_wait=1.0)
    with Gateway(second.url, resends=resends) as gateway:
        record = gateway.call(f"{tools.url}/api/exports", EXPORT, idempotency_key=key, reconcile=lookup)
        assert isinstance(record, CallRecord) and record.replayed is True, record
        assert record.outcome in ("unknown", "succeeded", "failed"), record
        assert record.stop_kind is not None or record.outcome == "succeeded", record
        assert record.next.step in ("do_not_repeat", "use_result", "give_up"), record
        deadline = time.monotonic() + 15
        while (journaled := gateway.get_call(record.call_id)).state == "in_flight":
            assert time.monotonic() < deadline, "the sweeper never settled the call"
            time.sleep(0.1)
        settled = gateway.call(f"{tools.url}/api/exports", EXPORT, idempotency_key=key, reconcile=lookup)
    written = exports_written(tools.url)
    assert written <= 1, "never a second write"
    assert journaled.record.settlement is not None and journaled.record.settlement.by == "lookup", journaled
    assert settled.settlement == journaled.record.settlement
    assert settled.outcome == ("succeeded" if written == 1 else "failed"), (settled, written)


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A proxy that answers every request itself, and counts what reached it."""

    seen: list[str] = []

    def _answer(self) -> None:
        _Proxy.seen.append(f"{self.command} {self.path} {self.headers.get('Authorization')}")
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_CONNECT = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture
def proxy_in_env(monkeypatch):
    """``proxy_in_env()`` makes every proxy variable of this process name a
    proxy that answers for everyone (servers started before keep their
    environment); it returns what reached that proxy."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Proxy.seen = []
    url = f"http://127.0.0.1:{server.server_address[1]}"

    def arm() -> list[str]:
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        return _Proxy.seen

    yield arm
    server.shutdown()


def test_a_loopback_gateway_is_never_asked_through_a_proxy(stack, proxy_in_env):
    tools, url = stack()
    seen = proxy_in_env()
    with Gateway(url, "s3cret-token") as gateway:
        record = gateway.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"})
        assert record.succeeded, record
        assert [c.call_id for c in gateway.list_calls()] == [record.call_id], "keyed, so journaled"

    async def asynchronously() -> str:
        async with AsyncGateway(url.replace("127.0.0.1", "localhost"), "s3cret-token") as gateway:
            await gateway.list_calls()
            return (await gateway.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"})).outcome

    assert asyncio.run(asynchronously()) == "succeeded"
    assert seen == [], "the token went to the proxy"


def test_a_spawned_gateway_is_ready_whatever_proxy_the_environment_names(proxy_in_env):
    seen = proxy_in_env()
    with Gateway.spawn() as gateway:
        assert len(gateway.list_calls()) == 0
    assert seen == []
