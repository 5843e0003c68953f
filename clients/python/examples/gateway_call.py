"""Tool calls through the recourse gateway: a read, then a write whose answer the tool loses.

Needs `recourse tools serve --port 8700 --fault exports:crash_after_commit:1.0 --no-declared-lookups` and
`recourse serve --port 8780` running (RECOURSE_TOOLS_URL / RECOURSE_GATEWAY_URL to point elsewhere).
"""

import os
import sys

from recourse_client import Gateway

GATEWAY = os.environ.get("RECOURSE_GATEWAY_URL", "http://127.0.0.1:8780")
TOOLS = os.environ.get("RECOURSE_TOOLS_URL", "http://127.0.0.1:8700")
EXPORT = {"source_id": "sales-2024", "format": "pdf"}

with Gateway(GATEWAY, token=os.environ.get("RECOURSE_GATEWAY_TOKEN")) as gateway:
    quote = gateway.call(f"{TOOLS}/api/stock/quote", {"symbol": "TSLA"})
    print(f"stock_quote: {quote.outcome}, next step {quote.next.step}, price {quote.data['price']}")

    export = gateway.call(f"{TOOLS}/api/exports", EXPORT)  # a write: the client gives it a key
    print(f"exports_create: {export.outcome}, next step {export.next.step}")
    print(f"  the model reads: {export.next.model_message}")

    again = gateway.call(f"{TOOLS}/api/exports", EXPORT, idempotency_key=export.idempotency_key)
    print(f"  sent again with its key: replayed {again.replayed}, outcome {again.outcome}")
    print(f"  in the journal: {gateway.get_call(export.call_id).state}")

sys.exit(0 if quote.succeeded and export.next.step == "do_not_repeat" and again.replayed else 1)
