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
