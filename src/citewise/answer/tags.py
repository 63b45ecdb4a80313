"""Streaming removal of the prompt's structural markers from the LLM's output.

The answer prompt (:mod:`citewise.answer.prompts`) wraps the evidence in ``<evidence>`` ...
``</evidence>`` and each passage in ``<passage source="...">`` ... ``</passage>``. A model may
repeat these markers in its answer; they mean nothing to the reader and reveal the prompt's
structure, so :class:`PromptTagFilter` removes them from the token stream (as
:class:`~citewise.answer.grounding.CitationFilter` removes citations to missing passages).

Matched: an opening, closing or self-closing ``evidence`` or ``passage`` tag, in any letter
case, with spaces after ``<`` or around ``/``, and any attributes (``<passage source="a.md">``,
``</ Evidence >``, ``<evidence/>``). Everything else is kept as it is: ``a < b``, ``<b>``,
``<evidently>``, ``<passages>``, citations ``[1]``.

Streaming: text is passed on at once up to a ``<``. From a ``<`` whose text so far could still
become a marker, up to :data:`MAX_HOLD` characters are held back (``<`` ``/evid`` ...); once
the name is complete (``<passage`` and a space, ``/`` or ``>``), the tag is held until its
``>``, up to :data:`MAX_TAG` characters (a ``source`` attribute can be long). Past those
limits, or when the text can no longer be a marker, it is passed on unchanged.
"""

from __future__ import annotations

import re

#: Characters held back from a ``<`` while the text may still become a marker's name.
MAX_HOLD = 40
#: Characters held back for a marker whose name is complete, until its ``>``.
MAX_TAG = 400
#: The prompt's structural tag names.
NAMES = ("evidence", "passage")

_TAG = re.compile(r"<\s*/?\s*(?:evidence|passage)(?=[\s/>])[^<>]*>", re.IGNORECASE)
_HEAD = re.compile(r"<\s*/?\s*([A-Za-z]*)")


class PromptTagFilter:
    """Removes ``<evidence>``/``<passage>`` markers from streamed text; see the module
    docstring.

    ``feed(piece)`` returns the text that can be shown now, ``flush()`` the rest at the end
    of the stream. ``removed`` lists the markers taken out, in order.
    """

    def __init__(self) -> None:
        self.removed: list[str] = []
        self._buf = ""

    def feed(self, piece: str) -> str:
        """Add ``piece`` of the stream; returns the text that is safe to show now (markers
        removed, a possible marker's beginning held back)."""
        self._buf += piece
        out: list[str] = []
        while self._buf:
            start = self._buf.find("<")
            if start < 0:
                out.append(self._buf)
                self._buf = ""
                break
            out.append(self._buf[:start])
            self._buf = self._buf[start:]
            kind, end = self._classify(self._buf)
            if kind == "tag":
                self.removed.append(self._buf[:end])
                self._buf = self._buf[end:]
            elif kind == "wait":
                break
            else:
                out.append("<")
                self._buf = self._buf[1:]
        return "".join(out)

    def flush(self) -> str:
        """The held-back text at the end of the stream; returns it unless it is a marker cut
        off before its ``>`` (``<passage source="a``), which is dropped."""
        rest, self._buf = self._buf, ""
        out: list[str] = []
        while rest:
            start = rest.find("<")
            if start < 0:
                out.append(rest)
                break
            out.append(rest[:start])
            rest = rest[start:]
            head = _HEAD.match(rest)
            assert head is not None
            after = rest[head.end():]
            if head.group(1).lower() in NAMES and (not after or after[0] in " \t\r\n/"):
                self.removed.append(rest)
                break
            out.append("<")
            rest = rest[1:]
        return "".join(out)

    @staticmethod
    def _classify(text: str) -> tuple[str, int]:
        """For ``text`` starting with ``<``: ("tag", its length) for a whole marker, ("wait",
        0) when more input may make it one, ("text", 0) when it cannot be one."""
        m = _TAG.match(text)
        if m is not None:
            return "tag", m.end()
        head = _HEAD.match(text)
        assert head is not None
        name, rest = head.group(1).lower(), text[head.end():]
        if not rest:  # all of it so far may be a marker's beginning
            if any(n.startswith(name) for n in NAMES) and len(text) <= MAX_HOLD:
                return "wait", 0
            return "text", 0
        if name in NAMES and rest[0] in " \t\r\n/>" and "<" not in rest and ">" not in rest:
            return ("wait", 0) if len(text) <= MAX_TAG else ("text", 0)
        return "text", 0


def strip_prompt_tags(text: str) -> str:
    """``text`` with the prompt's markers removed (a whole answer, not a stream)."""
    f = PromptTagFilter()
    return f.feed(text) + f.flush()


__all__ = ["MAX_HOLD", "MAX_TAG", "NAMES", "PromptTagFilter", "strip_prompt_tags"]
