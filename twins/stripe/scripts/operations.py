"""Regenerate src/operations.json: the OpenAPI operations the twin serves, for the generic MCP
tools (stripe_api_search/details/read/write, search_stripe_documentation).

Reads Stripe's OpenAPI (tests/specs/stripe/openapi.json) and the twin's route table (the
`.get/.post/.delete("path", "action"` calls in src/*.rs); keeps, for each served route, the
operation id, summary, a plain-text description and every top-level parameter with its type,
required flag, enum and a one-sentence description (nested object fields by name and type).
Run from the repository root: python3 twins/stripe/scripts/operations.py"""

import html
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]
SRC = ROOT / "twins" / "stripe" / "src"
spec = json.loads((ROOT / "tests" / "specs" / "stripe" / "openapi.json").read_text())


def plain(text, limit):
    text = re.sub(r"<[^>]+>", "", html.unescape(text or ""))
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > limit // 3 else cut.rstrip() + "…"


def resolve(schema):
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = spec["components"]["schemas"][name]
    return schema


def type_of(schema):
    schema = resolve(schema)
    if "anyOf" in schema:
        kinds = []
        for s in schema["anyOf"]:
            t = type_of(s)
            if t not in kinds:
                kinds.append(t)
        return " | ".join(kinds)
    t = schema.get("type", "object")
    if t == "array":
        return f"array of {type_of(schema.get('items', {}))}"
    if t == "string" and schema.get("enum") == [""]:
        return "empty string"
    return t


def enum_of(schema):
    schema = resolve(schema)
    if schema.get("type") == "array":
        # A list of enumerated values (`enabled_events`): the values its items take.
        schema = resolve(schema.get("items", {}))
    values = list(schema.get("enum") or [])
    for s in schema.get("anyOf", []):
        values += [v for v in resolve(s).get("enum") or [] if v != ""]
    return values or None


def fields_of(schema):
    schema = resolve(schema)
    for s in schema.get("anyOf", []):
        s = resolve(s)
        if s.get("type") == "object" and s.get("properties"):
            schema = s
            break
    if schema.get("type") == "array":
        schema = resolve(schema.get("items", {}))
    props = schema.get("properties") or {}
    return [{"name": k, "type": type_of(v)} for k, v in props.items()] or None


def param(name, where, schema, required, description):
    p = {"name": name, "in": where, "type": type_of(schema), "required": bool(required)}
    e = enum_of(schema)
    if e:
        p["enum"] = e
    d = plain(description or resolve(schema).get("description"), 160)
    if d:
        p["description"] = d
    f = fields_of(schema)
    if f and "object" in p["type"]:
        p["fields"] = f
    return p


# Parameters of API version 2024-06-20 (what stripe-python and stripe-node send) that this
# OpenAPI snapshot does not describe: accepted, and described here.
DISCOUNT_FIELDS = [{"name": "coupon", "type": "string"}, {"name": "discount", "type": "string"}, {"name": "promotion_code", "type": "string"}]
EXTRA = {
    "subscriptions.create": [("discounts", "array of object", "The coupons or promotion codes to redeem into discounts for the subscription.", DISCOUNT_FIELDS)],
    "subscriptions.update": [("discounts", "array of object | empty string", "The coupons or promotion codes to redeem into discounts for the subscription; an empty value removes them.", DISCOUNT_FIELDS)],
}

# Parameters Stripe added after this mid-2023 snapshot, as stripe-python 12.5.2's typed
# parameters name them. The twin refuses a parameter its operation does not have, so these
# must be known or a client following today's documentation would be refused; the twin takes
# them and does not act on them.
NEWER = {
    "customers.create": ["validate"],
    "customers.update": ["validate"],
    "payment_methods.create": ["allow_redisplay", "alma", "amazon_pay", "billie", "crypto", "kakao_pay", "kr_card", "mobilepay", "multibanco", "naver_pay", "nz_bank_account", "pay_by_bank", "payco", "paypal", "revolut_pay", "samsung_pay", "satispay", "swish", "twint", "zip"],
    "payment_methods.update": ["allow_redisplay", "pay_by_bank"],
    "payment_intents.create": ["confirmation_token", "excluded_payment_method_types", "payment_method_configuration"],
    "payment_intents.update": ["payment_method_configuration"],
    "payment_intents.confirm": ["confirmation_token"],
    "payment_intents.capture": ["final_capture"],
    "payouts.create": ["payout_method"],
    "products.create": ["marketing_features", "type"],
    "products.list": ["type"],
    "products.update": ["marketing_features"],
    "setup_intents.create": ["confirmation_token", "payment_method_configuration", "use_stripe_sdk"],
    "setup_intents.update": ["payment_method_configuration"],
    "setup_intents.confirm": ["confirmation_token", "use_stripe_sdk"],
    "subscriptions.create": ["billing_cycle_anchor_config", "billing_mode", "invoice_settings"],
    "subscriptions.list": ["automatic_tax", "plan"],
    "subscriptions.update": ["invoice_settings"],
    "subscription_items.create": ["discounts", "plan"],
    "subscription_items.update": ["discounts", "plan"],
    "invoiceitems.create": ["pricing"],
    "invoiceitems.update": ["pricing"],
    "invoices.create": ["automatically_finalizes_at", "effective_at", "issuer", "number", "rendering"],
    "invoices.update": ["automatically_finalizes_at", "effective_at", "issuer", "number", "rendering"],
    "checkout.sessions.create": ["adaptive_pricing", "optional_items", "origin_context", "payment_method_configuration", "payment_method_data", "permissions", "redirect_on_completion", "return_url", "saved_payment_method_options", "ui_mode", "wallet_options"],
    "checkout.sessions.list": ["created", "status"],
    "payment_links.create": ["inactive_message", "optional_items", "restrictions"],
    "payment_links.update": ["inactive_message", "payment_intent_data", "phone_number_collection", "restrictions", "submit_type", "subscription_data", "tax_id_collection"],
}

routes = []
for f in sorted(SRC.glob("*.rs")):
    for m in re.finditer(r'\.(get|post|delete)\("(/v1/[^"]+)", "([^"]+)"', f.read_text()):
        routes.append((m.group(1), m.group(2), m.group(3)))


def same(a, b):
    x, y = a.split("/"), b.split("/")
    return len(x) == len(y) and all(p == q or (p.startswith("{") and q.startswith("{")) for p, q in zip(x, y))


ops = []
for method, path, action in routes:
    matches = [p for p in spec["paths"] if same(p, path)]
    assert len(matches) <= 1, (method, path, matches)
    if not matches or method not in spec["paths"][matches[0]]:
        print(f"not in Stripe's OpenAPI, left out: {method.upper()} {path}")
        continue
    api_path = matches[0]
    op = spec["paths"][api_path][method]
    params = []
    for p in op.get("parameters", []):
        if p["in"] in ("path", "query"):
            params.append(param(p["name"], p["in"], p.get("schema", {}), p.get("required"), p.get("description")))
    body = op.get("requestBody", {}).get("content", {}).get("application/x-www-form-urlencoded", {}).get("schema")
    if body:
        body = resolve(body)
        req = set(body.get("required", []))
        for name, s in (body.get("properties") or {}).items():
            params.append(param(name, "body", s, name in req, None))
    where = "query" if method == "get" else "body"
    extra = EXTRA.get(action, []) + [(n, "any", "A parameter of Stripe's current API, newer than this description; accepted, not acted on.", None) for n in NEWER.get(action, [])]
    for name, kind, text, fields in extra:
        if not any(p["name"] == name for p in params):
            p = {"name": name, "in": where, "type": kind, "required": False, "description": text}
            if fields:
                p["fields"] = fields
            params.append(p)
    ops.append({
        "operation_id": op["operationId"],
        "method": method.upper(),
        "path": api_path,
        "route": path,
        "action": action,
        "summary": plain(op.get("summary"), 200),
        "description": plain(op.get("description"), 400),
        "parameters": params,
    })

out = SRC / "operations.json"
# One operation a line: small, and a diff shows which operation changed.
out.write_text("[\n" + ",\n".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in ops) + "\n]\n")
print(f"{len(ops)} operations, {out.stat().st_size} bytes")
