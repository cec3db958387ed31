import base64
import hashlib
import hmac
import json
import time


def verify_webhook_signature(raw_body: bytes, headers: dict, secret_hex: str, tolerance: int = 300) -> bool:
    """Standard Webhooks: HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>", sent within `tolerance` seconds."""
    msg_id, timestamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > tolerance:
        return False
    signed = f"{msg_id}.{timestamp}.".encode() + raw_body
    digest = hmac.new(bytes.fromhex(secret_hex), signed, hashlib.sha256).digest()
    expected = base64.b64encode(digest)
    # Several space-separated "v1,<signature>" during a secret rotation: any one may match.
    return any(
        hmac.compare_digest(expected, signature.split(",", 1)[1].encode())
        for signature in headers.get("webhook-signature", "").split(" ")
        if signature.startswith("v1,")
    )


def verify_x_signature(raw_body: bytes, headers: dict, secret_hex: str) -> bool:
    """x-signature: HMAC-SHA256 of the parsed body re-serialized in canonical JSON (keys sorted, no whitespace)."""
    canonical = json.dumps(json.loads(raw_body), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hmac.new(bytes.fromhex(secret_hex), canonical.encode(), hashlib.sha256).digest()
    return hmac.compare_digest(base64.b64encode(digest), headers.get("x-signature", "").encode())
