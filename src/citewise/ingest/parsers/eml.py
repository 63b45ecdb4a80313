"""E-mail messages (``.eml``, RFC 5322 / MIME), read with the standard library's ``email``
package (``policy.default``, which decodes encoded words and charsets).

Blocks, in order:

- the headers a reader sees (From, To, Cc, Date, Subject), one line each, as one PARAGRAPH
  block, so "who sent ..." and "when ..." are answerable and cited;
- the body: the ``text/plain`` part (one PARAGRAPH block per run of non-blank lines), else
  the ``text/html`` part's visible text (by the HTML parser, hidden elements dropped);
- each attachment, parsed by the parser for its type (its file name's suffix and content:
  a PDF, Word file, spreadsheet, another e-mail, ...), its blocks under the section
  ``"Attachment: NAME"`` (then the attachment's own section path) with their pages kept: a
  citation reads "mail.eml, p. 2, Attachment: contract.pdf > Payment". An attachment that
  cannot be indexed (an image, a damaged file) is left out with a warning naming it and the
  reason; the message itself is still indexed. Attached messages nest at most
  :data:`MAX_DEPTH` deep.

The headers also become metadata (``from``, ``to``, ``cc``, ``subject``, ``message_id``,
``date`` and ``created`` as an ISO date, ``attachments``: the file names), and the subject is
the title. Content that has none of the headers From, To, Subject or Date, or is binary, is
refused as not an e-mail message.
"""

from __future__ import annotations

import email
import mimetypes
from email import policy
from email.message import EmailMessage, MIMEPart
from pathlib import Path
from typing import Any

from citewise.errors import CorruptDocumentError, DocumentError, EmptyDocumentError
from citewise.ingest.parsers.base import TextBuilder, parser_for, register
from citewise.ingest.parsers.html import check_depth, html_blocks
from citewise.ingest.parsers.text import (
    clean_text,
    collapse_blobs,
    decode_text,
    looks_binary,
    paragraph_spans,
)
from citewise.types import BlockKind, ParsedDocument

__all__ = ["ATTACHMENT", "MAX_DEPTH", "parse"]

#: attached messages inside attached messages are read this many levels deep
MAX_DEPTH = 3
#: the section an attachment's blocks are cited under: ``ATTACHMENT.format(name=...)``
ATTACHMENT = "Attachment: {name}"
_SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")


@register("eml", suffixes=(".eml",))
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse an e-mail message into header, body and attachment blocks (see the module
    docstring).

    Raises EmptyDocumentError (0 bytes, or no text in the headers, body or attachments) and
    CorruptDocumentError (binary content, or no e-mail headers).
    """
    return _parse(path, data, depth=0)


def _parse(path: Path, data: bytes, depth: int) -> ParsedDocument:
    if not data.strip():
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    if looks_binary(data[:4096]):
        raise CorruptDocumentError(path, "not an e-mail message: binary content")
    message = email.message_from_bytes(data, policy=policy.default)
    assert isinstance(message, EmailMessage)  # policy.default builds EmailMessage objects
    if not any(message.get(h) for h in ("From", "To", "Subject", "Date")):
        raise CorruptDocumentError(
            path, "not an e-mail message: none of the headers From, To, Subject or Date")
    metadata = _metadata(message)
    builder = TextBuilder()
    builder.add(BlockKind.PARAGRAPH, "\n".join(
        f"{h}: {_header(message, h)}" for h in _SHOWN_HEADERS if _header(message, h)))
    warnings: list[str] = []
    _add_body(path, message, builder, warnings)
    names: list[str] = []
    for i, part in enumerate(message.iter_attachments(), start=1):
        name = _attachment_name(part, i)
        names.append(name)
        try:
            attached = _parse_attachment(path, part, name, depth)
        except DocumentError as exc:
            warnings.append(f"attachment {name}: not indexed ({exc.detail})")
            continue
        except Exception as exc:  # noqa: BLE001 - an attachment's parser failing is its problem
            warnings.append(f"attachment {name}: not indexed ({type(exc).__name__}: {exc})")
            continue
        builder.extend(attached.blocks, section=(ATTACHMENT.format(name=name),))
        warnings.extend(f"attachment {name}: {w}" for w in attached.warnings)
    if names:
        metadata["attachments"] = names
    if not builder.blocks:
        raise EmptyDocumentError(path, "no text in the e-mail message")
    title = metadata.get("subject") or Path(path).stem
    return builder.build("eml", title=title, metadata=metadata, warnings=tuple(warnings))


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, IndexError, TypeError):  # a header the policy cannot parse
        value = message.get_all(name, failobj=[""])[0] if name in message else ""
    return " ".join(clean_text(str(value or "")).split())


def _metadata(message: EmailMessage) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key, name in (("from", "From"), ("to", "To"), ("cc", "Cc"), ("subject", "Subject"),
                      ("message_id", "Message-ID")):
        if value := _header(message, name):
            meta[key] = value
    try:
        date = message["Date"]
        when = getattr(date, "datetime", None)
    except (ValueError, IndexError, TypeError):
        when = None
    if when is not None:
        meta["date"] = meta["created"] = when.date().isoformat()
    return meta


def _text_of(part: MIMEPart) -> str:
    """A text part's content as a string (an unknown charset falls back to detection)."""
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError):
        raw = part.get_payload(decode=True)
        content = decode_text("body", raw) if isinstance(raw, bytes) and raw else ""
    return clean_text(content if isinstance(content, str) else "")


def _add_body(path: Path, message: EmailMessage, builder: TextBuilder,
              warnings: list[str]) -> None:
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return
    text = _text_of(body)
    if body.get_content_subtype() == "html":
        try:
            check_depth(path, text.encode("utf-8", "surrogatepass"))
        except DocumentError as exc:
            warnings.append(f"HTML body: not indexed ({exc.detail})")
            return
        blocks, _title, _h1 = html_blocks(text)
        builder.extend(blocks)
        return
    text = collapse_blobs(text)
    for start, end, _first, _last in paragraph_spans(text):
        builder.add(BlockKind.PARAGRAPH, text[start:end])


def _attachment_name(part: MIMEPart, index: int) -> str:
    name = part.get_filename()
    if name:
        return Path(" ".join(clean_text(name).split())).name or f"attachment-{index}"
    content_type = part.get_content_type()
    suffix = ".eml" if content_type == "message/rfc822" else (
        mimetypes.guess_extension(content_type) or "")
    return f"attachment-{index}{suffix}"


def _parse_attachment(path: Path, part: MIMEPart, name: str, depth: int) -> ParsedDocument:
    where = f"{path}:{name}"
    if part.get_content_type() == "message/rfc822" or name.lower().endswith(".eml"):
        if depth >= MAX_DEPTH:
            raise DocumentError(where, f"attached messages nested deeper than {MAX_DEPTH}")
        if part.get_content_type() == "message/rfc822":
            inner = part.get_content()
            data = inner.as_bytes() if hasattr(inner, "as_bytes") else b""
        else:
            data = part.get_payload(decode=True) or b""
        return _parse(Path(name), data, depth + 1)
    payload = part.get_payload(decode=True)
    data = payload if isinstance(payload, bytes) else b""
    if not data.strip():
        raise EmptyDocumentError(where, "empty attachment")
    file = Path(name)
    return parser_for(file, data).parse(file, data)
