"""Every `/v1` answer the suite receives through `conftest.Server.api`, checked against the
server's own `/v1/openapi.json` (the same check as the Rust harness's `harness::openapi`):
the operation its method and path name must describe its status (or a `default` response)
with the answer's media type, and a JSON answer must validate against that schema."""

import json
import urllib.request

from jsonschema import Draft202012Validator, FormatChecker

_DOCS = {}
# The URLs of the `pome serve` processes the suite started: only their `/v1` is checked (a
# twin reached by host name may have a `/v1/…` of its vendor's own).
SERVERS = set()


def document(url):
    """The document a server at `url` serves (no key needed), fetched once."""
    if url not in _DOCS:
        with urllib.request.urlopen(f"{url}/v1/openapi.json") as resp:
            _DOCS[url] = json.load(resp)
    return _DOCS[url]


def operation(doc, method, path):
    """(path template, operation or None) for `method path`, literal segments preferred over
    `{parameters}`; None when no template matches."""
    segments = path.split("?")[0].split("#")[0].split("/")
    best = None
    for template, item in doc["paths"].items():
        parts = template.split("/")
        if len(parts) != len(segments):
            continue
        literal = [not (p.startswith("{") and p.endswith("}")) for p in parts]
        if not all((not lit and s) or p == s for p, s, lit in zip(parts, segments, literal)):
            continue
        score = sum(literal)
        if best is None or score > best[0]:
            best = (score, template, item)
    if best is None:
        return None
    return best[1], best[2].get(method.lower())


def _validate(doc, schema, body, what):
    try:
        instance = json.loads(body)
    except ValueError as e:
        return f"{what}: the answer is not JSON: {e}"
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "allOf": [schema], "components": doc["components"]}
    errors = [f"at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft202012Validator(root, format_checker=FormatChecker()).iter_errors(instance)]
    return f"{what}: {'; '.join(errors[:5])}" if errors else None


def problem(doc, method, path, status, content_type, body):
    """What does not fit, or None."""
    found = operation(doc, method, path)
    if found is None or found[1] is None:
        if status == 404:  # the router's own fallback: no such route or method
            return _validate(doc, {"$ref": "#/components/schemas/Error"}, body, "the router's fallback")
        return "no path of the document matches it" if found is None else f"{found[0]} is described, but not with {method}"
    op = found[1]
    response = op["responses"].get(str(status)) or op["responses"].get("default")
    if response is None:
        return f"operation {op['operationId']} describes no {status} and no default response"
    content = response.get("content")
    if not content:
        return None if not body else "the response is described without content, but the answer has a body"
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in content:
        return f"its content type is {media!r}; the document has {list(content)}"
    schema = content[media]["schema"]
    if media == "application/json":
        return _validate(doc, schema, body, f"operation {op['operationId']}")
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return None if schema.get("type") == "string" else f"a {media} answer cannot be checked against {schema}"


def check_answer(url, method, path, status, content_type, body):
    """Fail the calling test when the answer does not fit the document."""
    why = problem(document(url), method, path, status, content_type, body)
    assert why is None, f"{method} {path} answered {status}, which /v1/openapi.json does not describe: {why}\nthe answer: {body[:2000]!r}"


def _check_httpx_response(request, response, stream):
    url = f"{request.url.scheme}://{request.url.netloc.decode()}"
    if url in SERVERS and request.url.path.startswith("/v1/") and not stream:
        check_answer(url, request.method, request.url.path, response.status_code, response.headers.get("content-type"), response.text)


def check_httpx(monkeypatch):
    """Check every answer an `httpx` client (sync or async) receives from a suite server's `/v1`."""
    import httpx

    send, send_async = httpx.Client.send, httpx.AsyncClient.send

    def checked(self, request, *args, **kwargs):
        response = send(self, request, *args, **kwargs)
        _check_httpx_response(request, response, kwargs.get("stream", False))
        return response

    async def checked_async(self, request, *args, **kwargs):
        response = await send_async(self, request, *args, **kwargs)
        _check_httpx_response(request, response, kwargs.get("stream", False))
        return response

    monkeypatch.setattr(httpx.Client, "send", checked)
    monkeypatch.setattr(httpx.AsyncClient, "send", checked_async)
