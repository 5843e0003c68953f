"""Tool calls through the recourse gateway: a read, then a write whose answer the tool loses.

Starts the reference tools (losing every export's answer, and naming no lookup for it) and a
gateway itself, with the `recourse` that `pip install recourse-cli` installed; or uses those at
RECOURSE_TOOLS_URL / RECOURSE_GATEWAY_URL when set.
"""

import os
import sys
from contextlib import ExitStack

from recourse_client import Gateway, spawn_tools

EXPORT = {"source_id": "sales-2024", "format": "pdf"}

with ExitStack() as stack:
    TOOLS = os.environ.get("RECOURSE_TOOLS_URL") or stack.enter_context(
        spawn_tools(["exports:crash_after_commit:1.0"], args=["--no-declared-lookups"])
    )
    if os.environ.get("RECOURSE_GATEWAY_URL"):
        gateway = stack.enter_context(Gateway(os.environ["RECOURSE_GATEWAY_URL"], os.environ.get("RECOURSE_GATEWAY_TOKEN")))
    else:
        gateway = stack.enter_context(Gateway.spawn())

    quote = gateway.call(f"{TOOLS}/api/stock/quote", {"symbol": "TSLA"})
    print(f"stock_quote: {quote.outcome}, next step {quote.next.step}, price {quote.data['price']}")

    export = gateway.call(f"{TOOLS}/api/exports", EXPORT)  # a write: the client gives it a key
    print(f"exports_create: {export.outcome}, next step {export.next.step}")
    print(f"  the model reads: {export.next.model_message}")

    again = gateway.call(f"{TOOLS}/api/exports", EXPORT, idempotency_key=export.idempotency_key)
    print(f"  sent again with its key: replayed {again.replayed}, outcome {again.outcome}")
    print(f"  in the journal: {gateway.get_call(export.call_id).state}")

sys.exit(0 if quote.succeeded and export.next.step == "do_not_repeat" and again.replayed else 1)
