"""OCR accuracy and speed on rendered pages of real text (issue 21, cases C01 and N09).

Each page is a real SciFact abstract (../shared/datasets/scifact/corpus.jsonl: title and text),
typeset in Liberation Serif 11 pt on an A4 page at 200 dpi (1654 x 2339 pixels, as a scanner
makes it) and saved as an image-only PDF (Pillow). Every page is then read through citewise's
own PDF parser with OCR on (``ParseOptions(ocr=RapidOcr(...), ocr_dpi=D)``), for each
rendering resolution D and with and without the space repair of ``citewise.ingest.ocr.spaced``.

Measured per configuration, over all pages:

* character accuracy: 1 - Levenshtein(OCR text, true text) / len(true text), both with runs of
  whitespace made one space (rapidfuzz's Levenshtein distance);
* the same without any whitespace (recognition alone, spacing left out);
* word recall: the share of the true text's words (lower-cased, punctuation stripped) found
  among the OCR text's words, which is what BM25 can match;
* pages/s: pages divided by the wall time of the parse (rendering, OCR, layout).

Usage (needs ``pip install 'citewise[ocr]' rapidfuzz``)::

    python benchmarks/ocr.py --pages 4 --dpi 72,100,150 --threads 2
"""

from __future__ import annotations

import argparse
import re
import tempfile
import textwrap
import time
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from rapidfuzz.distance import Levenshtein

from citewise.eval.jsonl import jsonl_values
from citewise.ingest.ocr import RapidOcr
from citewise.ingest.parsers.base import ParseOptions
from citewise.ingest.pipeline import parse_file

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
FONT = "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf"
SCAN_DPI = 200


def abstracts(n: int) -> list[str]:
    """The first ``n`` SciFact abstracts of 600-1,600 characters, as title + text."""
    out = []
    for row in jsonl_values(DATASETS / "scifact" / "corpus.jsonl"):
        text = f"{row['title']}\n{row['text']}"
        if 600 <= len(text) <= 1600:
            out.append(text)
        if len(out) == n:
            break
    return out


def scan(text: str, path: Path) -> str:
    """``text`` typeset on an A4 page at SCAN_DPI, saved as an image-only PDF at ``path``;
    returns the text as laid out (the ground truth)."""
    width, height = int(8.27 * SCAN_DPI), int(11.69 * SCAN_DPI)
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype(FONT, round(11 / 72 * SCAN_DPI))
    lines = [w for para in text.split("\n") for w in textwrap.wrap(para, 80)]
    y = SCAN_DPI  # one-inch margins
    for line in lines:
        draw.text((SCAN_DPI, y), line, font=font, fill=0)
        y += round(11 / 72 * SCAN_DPI * 1.35)
    page.save(path, "PDF", resolution=SCAN_DPI)
    return " ".join(lines)


def words(text: str) -> list[str]:
    return [w for w in re.sub(r"[^\w\s-]", " ", text.lower()).split() if w]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=4)
    ap.add_argument("--dpi", default="72,100,150")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repair", default="off,on", help="space repair settings to run")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="citewise-ocr-"))
    pages = []
    for i, text in enumerate(abstracts(args.pages)):
        path = folder / f"page{i}.pdf"
        pages.append((path, scan(text, path)))
    engines = {fix == "on": RapidOcr(args.threads, fix_spaces=fix == "on")
               for fix in args.repair.split(",")}
    print("| render dpi | space repair | char accuracy | char accuracy, no spaces | "
          "word recall | pages/s |")
    print("|---|---|---|---|---|---|")
    for dpi in (int(d) for d in args.dpi.split(",")):
        for fix, engine in engines.items():
            dist = dist_ns = chars = chars_ns = found = total = 0
            started = time.perf_counter()
            for path, truth in pages:
                doc = parse_file(path, path.read_bytes(),
                                 options=ParseOptions(ocr=engine, ocr_dpi=dpi))
                got = " ".join(doc.text.split())
                dist += Levenshtein.distance(got, truth)
                chars += len(truth)
                dist_ns += Levenshtein.distance(re.sub(r"\s", "", got), re.sub(r"\s", "", truth))
                chars_ns += len(re.sub(r"\s", "", truth))
                seen = set(words(got))
                expected = words(truth)
                found += sum(w in seen for w in expected)
                total += len(expected)
            seconds = time.perf_counter() - started
            print(f"| {dpi} | {'on' if fix else 'off'} | {1 - dist / chars:.3f} | "
                  f"{1 - dist_ns / chars_ns:.3f} | {found / total:.3f} | "
                  f"{len(pages) / seconds:.2f} |", flush=True)


if __name__ == "__main__":
    main()
