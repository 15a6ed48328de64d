"""Reading fastquote and LiveVol bodies: JSONP, XML or JSON, all turned into one JSON-like tree.

fastquote answers chainLite and dtmontage as XML or JSON "depending on client headers", the chart as JSONP,
and time and sales as XML; LiveVol answers XML. ``document()`` accepts any of these and returns the JSON
form, where an XML element becomes a dict of its attributes plus its children by tag (a repeated tag
becomes a list, a lone one stays an object, exactly the artefact the JSON variant shows), so one mapper
reads both forms.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import FidelityHttp
from ftdesk.brokers.fidelity.upstream_answer import UpstreamResponse, raise_for_status
from ftdesk.domain.errors import BrokerError, NotFound, SessionExpired

# ``ident( ... )`` with optional whitespace and a trailing semicolon (strip it on every fastquote body).
_JSONP = re.compile(r"^\s*[A-Za-z_$][\w$.]*\s*\((?P<inner>.*)\)\s*;?\s*$", re.DOTALL)
_HTML_START = re.compile(rb"^\s*<(!doctype|html|head|body)\b", re.IGNORECASE)


def strip_jsonp(text: str) -> str:
    """Return the argument of a JSONP call, or the text unchanged when it is not one."""
    match = _JSONP.match(text)
    return match.group("inner") if match else text


def xml_tree(text: str) -> dict[str, Any]:
    """Parse XML into the JSON-like tree of the module docstring: ``{root_tag: {...}}``."""
    # ElementTree resolves no external entities, and the bundled expat (>= 2.4) caps entity expansion.
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise BrokerError(f"Fidelity sent XML that cannot be read ({exc})") from None
    return {root.tag: _element(root)}


def _element(element: ElementTree.Element) -> Any:
    node: dict[str, Any] = dict(element.attrib)
    for child in element:
        value = _element(child)
        if child.tag in node:
            existing = node[child.tag]
            node[child.tag] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            node[child.tag] = value
    body = (element.text or "").strip()
    if body and not len(element):
        if not node:
            return body
        node["text"] = body
    return node


def parse_body(response: UpstreamResponse) -> Any:
    """Return the JSON-like tree of a fastquote/LiveVol body (JSON, JSONP or XML); None when empty."""
    body = response.body.strip()
    if "html" in response.content_type or _HTML_START.match(body):
        # A web page where data was expected is how an expired session most likely looks (never captured).
        raise SessionExpired("Fidelity answered with a web page instead of data: the session has expired")
    if not body:
        return None
    text = strip_jsonp(response.text().strip()).strip()
    if text.startswith("<"):
        return xml_tree(text)
    try:
        return UpstreamResponse(response.status, "application/json", text.encode(), response.url).json()
    except BrokerError:
        if text and len(text) < 300:
            # A bare sentence such as "Delayed quotes not supported": the message is the answer.
            raise BrokerError(f"Fidelity market data refused the request: {text}") from None
        raise


async def document(http: FidelityHttp, url: str, what: str) -> Any:
    """GET a fastquote URL and return its tree; map expiry, HTTP errors and bare-text refusals."""
    response = await http.call("GET", url)
    raise_for_status(response, what)
    return parse_body(response)


def check_base(base: dict[str, Any], root: dict[str, Any], symbol: str, what: str) -> None:
    """Raise ``NotFound`` when ``BASE.err`` is set (unknown symbol), ``BrokerError`` for a bare message."""
    err = v.text(base.get("err"))
    if err is not None and err != "0":
        message = v.text(v.first(base, "msg", "errMsg", "message", "desc"))
        raise NotFound(
            f"Fidelity has no {what} for {symbol!r}" + (f": {message}" if message else ""),
            details={"symbol": symbol, "upstream_code": err},
        )
    if not base:
        message = v.text(v.first(root, "message", "Message", "error", "errorMessage"))
        if message:
            raise BrokerError(f"Fidelity {what} failed: {message}", details={"symbol": symbol})
