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

def form_body(op):
    """An operation's form body schema: `application/x-www-form-urlencoded`, or for uploads
    (`POST /v1/files`) `multipart/form-data`."""
    content = op.get("requestBody", {}).get("content", {})
    for kind in ("application/x-www-form-urlencoded", "multipart/form-data"):
        if content.get(kind, {}).get("schema"):
            return content[kind]["schema"]
    return None


# Parameters of API version 2024-06-20 that this snapshot lacks and the twin acts on.
NEWER_ACTED = {
    "accounts.create": ["controller"],
    "accounts.external_accounts.list": ["object"],
    "plans.create": ["meter"],
}

# Parameters Stripe documents as taking more shapes than this snapshot says: an external
# account is a token or a hash (`object`, `country`, `currency`, `account_number`, …),
# where the snapshot has only a string.
WIDER = {
    "accounts.create": ["external_account"],
    "accounts.update": ["external_account"],
    "accounts.external_accounts.create": ["external_account"],
    "accounts.bank_accounts.create": ["external_account"],
}

routes = []
for f in sorted(SRC.glob("*.rs")) + sorted((SRC / "api").glob("*.rs")):
    # `.post("/v1/…", "action"` and `.route(Some(Method::Get), "/v1/…", "action"` (a route
    # declared with its fidelity).
    for m in re.finditer(r'\.(?:(get|post|delete)\(|route\(Some\(Method::(Get|Post|Delete)\), )"(/v1/[^"]+)", "([^"]+)"', f.read_text()):
        routes.append(((m.group(1) or m.group(2)).lower(), m.group(3), m.group(4)))


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
    body = form_body(op)
    if body:
        body = resolve(body)
        req = set(body.get("required", []))
        for name, s in (body.get("properties") or {}).items():
            params.append(param(name, "body", s, name in req, None))
    where = "query" if method == "get" else "body"
    extra = EXTRA.get(action, []) + [(n, "any", "A parameter of Stripe's current API, newer than this description; accepted, not acted on.", None) for n in NEWER.get(action, [])]
    extra += [(n, "any", "A parameter of Stripe's current API, newer than this description.", None) for n in NEWER_ACTED.get(action, [])]
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

# Operations of API version 2024-06-20 that this mid-2023 snapshot does not describe, and the
# twin serves: billing meters and meter events. Described here as Stripe's API reference
# describes them (parameters as `(name, where, type, required, description, node)`, the node
# in param_schemas.json's form below), counted apart from the description's operations.
S, I = ["s", []], ["i"]
EXPAND = ["a", S]
PAGING = [("limit", "query", "integer", False, "A limit on the number of objects to be returned, between 1 and 100 (default 10).", I),
          ("starting_after", "query", "string", False, "A cursor for pagination: an object ID after which the page starts.", S),
          ("ending_before", "query", "string", False, "A cursor for pagination: an object ID before which the page ends.", S)]
EXP_Q = ("expand", "query", "array of string", False, "Specifies which fields in the response should be expanded.", EXPAND)
EXP_B = ("expand", "body", "array of string", False, "Specifies which fields in the response should be expanded.", EXPAND)
NEWER_OPERATIONS = [
    ("post", "/v1/billing/meters", "billing.meters.create", "PostBillingMeters", "Create a billing meter", "Creates a billing meter: how meter events with its event_name are aggregated for each customer, for the metered prices that use it.", [
        ("display_name", "body", "string", True, "The meter's name.", S),
        ("event_name", "body", "string", True, "The name of the meter events to aggregate.", S),
        ("default_aggregation", "body", "object", True, "The default settings to aggregate a meter's events with: formula count, sum or last.", ["o", [["formula", ["s", ["count", "last", "sum"]]]], -1, ["formula"]]),
        ("customer_mapping", "body", "object", False, "Where a meter event names its customer: event_payload_key (default stripe_customer_id), type by_id.", ["o", [["event_payload_key", S], ["type", ["s", ["by_id"]]]], -1, ["event_payload_key", "type"]]),
        ("value_settings", "body", "object", False, "Where a meter event gives its value: event_payload_key (default value).", ["o", [["event_payload_key", S]], -1, ["event_payload_key"]]),
        ("event_time_window", "body", "string", False, "The time window to pre-aggregate meter events for, if any: day or hour.", ["s", ["day", "hour"]]),
        EXP_B]),
    ("get", "/v1/billing/meters", "billing.meters.list", "GetBillingMeters", "List billing meters", "Retrieve a list of billing meters.", [
        ("status", "query", "string", False, "Filter results to only include meters with the given status: active or inactive.", ["s", ["active", "inactive"]]), *PAGING, EXP_Q]),
    ("get", "/v1/billing/meters/{id}", "billing.meters.retrieve", "GetBillingMetersId", "Retrieve a billing meter", "Retrieves a billing meter given an ID.", [EXP_Q]),
    ("post", "/v1/billing/meters/{id}", "billing.meters.update", "PostBillingMetersId", "Update a billing meter", "Updates a billing meter: its display name.", [
        ("display_name", "body", "string", False, "The meter's name.", S), EXP_B]),
    ("post", "/v1/billing/meters/{id}/deactivate", "billing.meters.deactivate", "PostBillingMetersIdDeactivate", "Deactivate a billing meter", "When a meter is deactivated, no more meter events are accepted for it, and it can no longer be attached to a price.", [EXP_B]),
    ("post", "/v1/billing/meters/{id}/reactivate", "billing.meters.reactivate", "PostBillingMetersIdReactivate", "Reactivate a billing meter", "When a meter is reactivated, events for it are accepted again, and it can be attached to a price.", [EXP_B]),
    ("get", "/v1/billing/meters/{id}/event_summaries", "billing.meters.event_summaries", "GetBillingMetersIdEventSummaries", "List billing meter event summaries", "Retrieve a list of billing meter event summaries: a customer's aggregated usage over a time range, in windows if asked.", [
        ("customer", "query", "string", True, "The customer for which to fetch event summaries.", S),
        ("start_time", "query", "integer", True, "The timestamp from when to start aggregating meter events (inclusive), aligned to the minute.", I),
        ("end_time", "query", "integer", True, "The timestamp from when to stop aggregating meter events (exclusive), aligned to the minute.", I),
        ("value_grouping_window", "query", "string", False, "Summaries by hour or day; one summary of the whole range when absent.", ["s", ["day", "hour"]]), *PAGING, EXP_Q]),
    ("post", "/v1/billing/meter_events", "billing.meter_events.create", "PostBillingMeterEvents", "Create a billing meter event", "Creates a billing meter event: usage a meter aggregates for a customer.", [
        ("event_name", "body", "string", True, "The name of the meter event: a meter with this event_name aggregates it.", S),
        ("payload", "body", "object", True, "The payload: the customer (stripe_customer_id by default) and the value (value by default).", ["o", [], 0, []]),
        ("identifier", "body", "string", False, "A unique identifier for the event; a repeat within 24 hours is refused.", S),
        ("timestamp", "body", "integer", False, "The time of the event, within the past 35 days and at most 5 minutes in the future; now by default.", I),
        EXP_B]),
    ("post", "/v1/billing/meter_event_adjustments", "billing.meter_event_adjustments.create", "PostBillingMeterEventAdjustments", "Create a billing meter event adjustment", "Creates a billing meter event adjustment: cancels a meter event by its identifier.", [
        ("event_name", "body", "string", True, "The name of the meter event.", S),
        ("type", "body", "string", False, "Specifies whether to cancel a single event or a range of events (cancel).", ["s", ["cancel"]]),
        ("cancel", "body", "object", False, "The event to cancel: its identifier.", ["o", [["identifier", S]], -1, []]),
        EXP_B]),
]
for method, path, action, op_id, summary, description, params in NEWER_OPERATIONS:
    ops.append({
        "operation_id": op_id, "method": method.upper(), "path": path, "route": path, "action": action,
        "summary": summary, "description": description,
        "parameters": ([{"name": "id", "in": "path", "type": "string", "required": True}] if "{id}" in path else [])
        + [{"name": n, "in": wh, "type": t, "required": r, "description": d} for n, wh, t, r, d, _ in params],
    })

out = SRC / "operations.json"
# One operation a line: small, and a diff shows which operation changed.
out.write_text("[\n" + ",\n".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in ops) + "\n]\n")
described = len(ops) - len(NEWER_OPERATIONS)
total = sum(1 for p in spec["paths"].values() for m in p if m in ("get", "post", "delete"))
print(f"{described} of the {total} operations of Stripe's OpenAPI description served, and {len(NEWER_OPERATIONS)} newer ones; {out.stat().st_size} bytes")


# ---------------------------------------------------------------------------------------
# src/param_schemas.json: every served operation's parameters at every depth, for the twin's
# validation of nested names, types and enum values (build.rs turns it into static tables).
# Nodes are shared: a subtree that occurs twice (an address, metadata) is stored once.
#
# A node is a list: ["s", [enum values]] a string, ["i"] an integer, ["n"] a decimal or
# float, ["b"] a boolean, ["o", [[name, node], ...], extra, [required]] a hash (its names
# sorted; `extra` the node of any other key, or -1 when other keys are unknown; the names it
# must have), ["a", item] an array,
# ["u", [node, ...]] any one of several, ["x"] anything (not described further).

nodes, node_ids = [], {}
DEEPEST = 12  # deeper than any request body Stripe describes; a recursive $ref stops here

# Nested parameters of API version 2024-06-20 and later that this mid-2023 snapshot does not
# describe, by path (`[]` an array's items) in any operation: a client following today's
# documentation sends them, and the twin takes them (NEWER, one level down).
NEWER_FIELDS = {
    "automatic_payment_methods": {"allow_redirects": ["s", ["always", "never"]]},
    "recurring": {"meter": ["s", []]},
}
# Values newer than the snapshot that an enumerated parameter takes (the twin serves them).
NEWER_VALUES = {
    "payment_method_data[type]": ["crypto"],
}


def node(n):
    key = json.dumps(n, separators=(",", ":"))
    if key not in node_ids:
        node_ids[key] = len(nodes)
        nodes.append(n)
    return node_ids[key]


def schema_node(schema, depth, path):
    schema = resolve(schema)
    if depth > DEEPEST:
        return node(["x"])
    if "anyOf" in schema:
        # `""` (Stripe's "unset") is taken everywhere, so the empty-string branch adds nothing.
        alts = [schema_node(s, depth, path) for s in schema["anyOf"] if resolve(s).get("enum") != [""]]
        alts = sorted(set(alts))
        if not alts:
            return node(["s", []])
        return alts[0] if len(alts) == 1 else node(["u", alts])
    t = schema.get("type", "object")
    if t == "string":
        if schema.get("format") == "decimal":
            return node(["n"])
        # Stripe does not hold an enumeration marked x-stripeBypassValidation to its values
        # (newer ones pass): such a parameter takes any string.
        bypass = schema.get("x-stripeBypassValidation")
        values = [] if bypass else [v for v in schema.get("enum") or [] if v != ""]
        return node(["s", values + NEWER_VALUES.get(path, []) if values else []])
    if t == "integer":
        return node(["i"])
    if t == "number":
        return node(["n"])
    if t == "boolean":
        return node(["b"])
    if t == "array":
        return node(["a", schema_node(schema.get("items", {}), depth + 1, f"{path}[]")])
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if not props and not extra:
        return node(["x"])
    fields = {k: schema_node(v, depth + 1, f"{path}[{k}]") for k, v in props.items()}
    for k, n in NEWER_FIELDS.get(path, {}).items():
        fields.setdefault(k, node(n))
    fields = [[k, n] for k, n in sorted(fields.items())]
    if extra is True or extra == {}:
        more = node(["x"])
    elif extra:
        more = schema_node(extra, depth + 1, f"{path}[]")
    else:
        more = -1
    # The names a nested hash requires (the top level's own are the handlers' to check).
    required = sorted(k for k in schema.get("required", []) if k in props)
    return node(["o", fields, more, required])


def node_of(n):
    """A node given in NEWER_OPERATIONS' nested form (children as nodes, not indexes)."""
    kind = n[0]
    if kind == "o":
        return node(["o", sorted([k, node_of(v)] for k, v in n[1]), node(["s", []]) if n[2] == 0 else -1, n[3]])
    if kind == "a":
        return node(["a", node_of(n[1])])
    return node(n)


roots = {}
for method, path, action in routes:
    matches = [p for p in spec["paths"] if same(p, path)]
    if not matches or method not in spec["paths"][matches[0]]:
        continue
    op = spec["paths"][matches[0]][method]
    fields = {}
    for p in op.get("parameters", []):
        if p["in"] == "query":
            fields[p["name"]] = schema_node(p.get("schema", {}), 1, p["name"])
    body = form_body(op)
    if body:
        for name, s in (resolve(body).get("properties") or {}).items():
            fields[name] = schema_node(s, 1, name)
    for n in NEWER.get(action, []) + NEWER_ACTED.get(action, []):
        fields.setdefault(n, node(["x"]))
    for n in WIDER.get(action, []):
        fields[n] = node(["x"])
    for name, _, _, fs in EXTRA.get(action, []):
        if name not in fields:
            item = node(["o", sorted([f["name"], node(["s", []])] for f in fs), -1, []])
            fields[name] = node(["u", sorted({node(["a", item]), node(["s", []])})])
    roots[action] = node(["o", sorted([k, v] for k, v in fields.items()), -1, []])

for _, _, action, _, _, _, params in NEWER_OPERATIONS:
    roots[action] = node(["o", sorted([n, node_of(nd)] for n, _, _, _, _, nd in params), -1, []])

schemas = SRC / "param_schemas.json"
schemas.write_text(json.dumps({"operations": dict(sorted(roots.items())), "nodes": nodes}, separators=(",", ":")) + "\n")
print(f"{len(nodes)} parameter schema nodes, {schemas.stat().st_size} bytes")
