"""OCR for image-only PDF pages (cases C01, N09), off unless ``CITEWISE_OCR=true``.

The engine is RapidOCR (``rapidocr-onnxruntime``: PaddleOCR's PP-OCRv4 detection and
recognition models run by ONNX Runtime, Apache-2.0, installed with ``pip install
'citewise[ocr]'``; the models ship inside the wheel, nothing is downloaded). A page is rendered
to a grayscale bitmap at ``ocr_dpi`` (see docs/benchmarks.md for accuracy by resolution),
read, and its text lines are put back in reading order: lines by the vertical position of
their boxes, words left to right, a paragraph break where the gap between lines exceeds a
line's height.

:func:`load_ocr` gives one engine per thread count for the process; :meth:`RapidOcr.read` is
serialised by a lock (one page at a time per process, using ``threads`` CPU threads).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from statistics import median
from typing import Any

import numpy as np

from citewise.errors import ConfigError


@dataclass(frozen=True)
class OcrLine:
    """One line of text found on an image: its text, box ``(x0, y0, x1, y1)`` in pixels (y
    down) and the recogniser's confidence (0..1)."""

    text: str
    box: tuple[float, float, float, float]
    score: float


class RapidOcr:
    """RapidOCR behind one method: a grayscale or RGB ``uint8`` image to text lines."""

    name = "rapidocr"

    def __init__(self, threads: int = 2, *, fix_spaces: bool = True) -> None:
        self.fix_spaces = fix_spaces  # put back spaces the recogniser left out (spaced())
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as err:  # the extra is not installed (or OpenCV lacks libGL)
            raise ConfigError(
                f"CITEWISE_OCR is on but the OCR engine cannot be loaded ({err}); install it "
                "with pip install 'citewise[ocr]', or set CITEWISE_OCR=false") from None
        # pages are upright: the 180-degree classifier is skipped (about 10% of the time)
        self._engine: Any = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1,
                                     use_cls=False)
        self._lock = threading.Lock()

    def read(self, image: np.ndarray) -> list[OcrLine]:
        """The text lines found on ``image`` (H x W gray or H x W x 3 RGB, uint8)."""
        if image.ndim == 2:
            image = np.repeat(image[:, :, None], 3, axis=2)
        with self._lock:
            result, _ = self._engine(np.ascontiguousarray(image), return_word_box=True)
        lines = []
        for row in result or []:
            points, text, score = row[0], row[1], row[2]
            if self.fix_spaces and len(row) >= 5:
                text = spaced(row[4], [(min(p[0] for p in b), max(p[0] for p in b))
                                       for b in row[3]], text)
            xs = [float(p[0]) for p in points]
            ys = [float(p[1]) for p in points]
            if text.strip():
                lines.append(OcrLine(text.strip(), (min(xs), min(ys), max(xs), max(ys)),
                                     float(score)))
        return lines


#: A run of this many characters with no space is taken for words the recogniser joined
#: (PP-OCR's recogniser sometimes drops every space of a line of Latin text:
#: "withawrittennoticeperiodof90days."); English words this long are rare.
LONG_RUN = 14
#: Inside such a run, a gap between two characters wider than this share of the median
#: character width is a space (see docs/benchmarks.md for the effect).
SPACE_GAP = 0.45
_WIDE = frozenset("mwMW")


def spaced(chars: list[str], spans: list[tuple[float, float]], text: str) -> str:
    """The line ``text`` rebuilt from its recognised characters and their horizontal
    ``spans`` (pixels): a run of at least :data:`LONG_RUN` characters without a space gets a
    space wherever two of its characters stand further apart than :data:`SPACE_GAP` of the
    median character width; shorter runs are kept as recognised. ``text`` itself when the
    characters and spans do not pair up (or are words, as for Chinese)."""
    if not chars or len(chars) != len(spans) or any(len(c) != 1 for c in chars):
        return text
    widths = sorted(b - a for c, (a, b) in zip(chars, spans, strict=True) if not c.isspace())
    if not widths:
        return text
    width = max(1.0, widths[len(widths) // 2])
    runs: list[list[tuple[str, float, float]]] = [[]]
    for c, (a, b) in zip(chars, spans, strict=True):
        if c.isspace():
            runs.append([])
        else:
            runs[-1].append((c, a, b))
    words: list[str] = []
    for run in runs:
        if not run:
            continue
        if len(run) < LONG_RUN:
            words.append("".join(c for c, _, _ in run))
            continue
        word = run[0][0]
        for (prev, _, end), (c, a, _) in pairwise(run):
            # the recogniser's box of a wide letter is narrower than the letter ("m ust")
            wide = 2.0 if prev in _WIDE else 1.0
            if a - end > SPACE_GAP * width * wide:
                words.append(word)
                word = ""
            word += c
        words.append(word)
    return " ".join(words)


@lru_cache(maxsize=2)
def load_ocr(threads: int = 2) -> RapidOcr:
    """The process's OCR engine for ``threads`` CPU threads (loaded once, about 0.3 s).

    Raises ConfigError naming the install command when ``citewise[ocr]`` is missing."""
    return RapidOcr(threads)


def paragraphs(lines: list[OcrLine]) -> list[str]:
    """``lines`` (any order) as paragraphs in reading order: boxes whose vertical centres lie
    within half a line height are one line (joined left to right with spaces); a gap between
    lines larger than the median line height starts a new paragraph."""
    if not lines:
        return []
    height = median(ln.box[3] - ln.box[1] for ln in lines) or 1.0
    rows: list[list[OcrLine]] = []
    for ln in sorted(lines, key=lambda ln: ((ln.box[1] + ln.box[3]) / 2, ln.box[0])):
        centre = (ln.box[1] + ln.box[3]) / 2
        if rows:
            last = rows[-1]
            last_centre = sum((x.box[1] + x.box[3]) / 2 for x in last) / len(last)
            if abs(centre - last_centre) <= height / 2:
                last.append(ln)
                continue
        rows.append([ln])
    out: list[list[str]] = [[]]
    bottom = None
    for row in rows:
        row.sort(key=lambda ln: ln.box[0])
        top = min(ln.box[1] for ln in row)
        if bottom is not None and top - bottom > height and out[-1]:
            out.append([])
        out[-1].append(" ".join(ln.text for ln in row))
        bottom = max(ln.box[3] for ln in row)
    return ["\n".join(p) for p in out if p]
