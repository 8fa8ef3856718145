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
    body = op.get("requestBody", {}).get("content", {}).get("application/x-www-form-urlencoded", {}).get("schema")
    if body:
        for name, s in (resolve(body).get("properties") or {}).items():
            fields[name] = schema_node(s, 1, name)
    for n in NEWER.get(action, []):
        fields.setdefault(n, node(["x"]))
    for name, _, _, fs in EXTRA.get(action, []):
        if name not in fields:
            item = node(["o", sorted([f["name"], node(["s", []])] for f in fs), -1, []])
            fields[name] = node(["u", sorted({node(["a", item]), node(["s", []])})])
    roots[action] = node(["o", sorted([k, v] for k, v in fields.items()), -1, []])

schemas = SRC / "param_schemas.json"
schemas.write_text(json.dumps({"operations": dict(sorted(roots.items())), "nodes": nodes}, separators=(",", ":")) + "\n")
print(f"{len(nodes)} parameter schema nodes, {schemas.stat().st_size} bytes")
