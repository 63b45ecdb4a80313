"""The scanner end to end on real CUAD contracts with the real bundled model and real indexes."""

from __future__ import annotations

from citewise.eval.cuad import load_contracts, overlaps
from citewise.ingest.parsers.base import parser_for
from citewise.scan.checks import Verdict
from citewise.scan.classify import chunk_types
from citewise.scan.playbook import load_playbook
from citewise.scan.scanner import Scanner
from citewise.types import Document
from tests.conftest import DATASETS

CUAD = DATASETS / "cuad"
MPHASE = "MphaseTechnologiesInc_20030911_10-K_EX-10.15_1560667_EX-10.15_Co-Branding Agreement.txt"
#: A fixed subset of the eval split (never used to build or tune the classifier).
SUBSET = [
    MPHASE,
    "OPTIMIZEDTRANSPORTATIONMANAGEMENT,INC_07_26_2000-EX-6.6-DISTRIBUTOR AGREEMENT.txt",
    "SYKESHEALTHPLANSERVICESINC_04_24_1998-EX-10.14-OUTSOURCING AGREEMENT.txt",
    "ScansourceInc_20190822_10-K_EX-10.38_11793958_EX-10.38_Distributor Agreement2.txt",
]


def _scanner(engine) -> Scanner:
    return engine.scanner(load_playbook("default"))


def test_clause_finding_floor_on_a_fixed_eval_subset(engine):
    contracts = {c.file: c for c in load_contracts(CUAD, "eval")}
    scanner = _scanner(engine)
    types = {r.clause_type for r in scanner.playbook.rules}
    gold = correct = cited = sure_correct = sure_cited = 0
    for name in SUBSET:
        contract = contracts[name]
        data = contract.path.read_bytes()
        parsed = parser_for(contract.path, data).parse(contract.path, data)
        doc = Document(id=name, path=name, source_path=str(contract.path), title=name,
                       format="text", content_hash="")
        report = scanner.check_document(doc, parsed)
        for flag in report.flags:
            spans = contract.spans.get(flag.clause_type, [])
            gold += bool(spans)
            if flag.citation is not None:
                right = overlaps((flag.citation.char_start, flag.citation.char_end), spans)
                cited += 1
                correct += right
                # found with confidence: the flags that may say compliant or deviates
                if flag.score >= flag.threshold:
                    sure_cited += 1
                    sure_correct += right
    assert gold == sum(len(types & set(contracts[n].spans)) for n in SUBSET) == 20
    assert correct >= FLOOR_CORRECT, (correct, cited)
    assert correct / cited >= FLOOR_PRECISION, (correct, cited)
    assert sure_correct >= FLOOR_CONFIDENT, (sure_correct, sure_cited)
    assert sure_correct / sure_cited >= FLOOR_CONFIDENT_PRECISION, (sure_correct, sure_cited)


#: Measured with the trained finder and the thresholds of train_scan_classifier.py: 16 correct
#: of 17 cited (20 annotated), 10 of 10 found with confidence; floors one clause below.
FLOOR_CORRECT = 15
FLOOR_PRECISION = 0.85
FLOOR_CONFIDENT = 9
FLOOR_CONFIDENT_PRECISION = 0.85


def test_scan_a_three_page_contract_with_progress(engine, tmp_path):
    src = CUAD / "full_contract_txt" / MPHASE
    path = tmp_path / "co-branding.txt"
    path.write_bytes(src.read_bytes())
    steps = []
    report = engine.scan(path, "default", progress=lambda s, i, n: steps.append((s, i, n)))
    assert steps == [("load", 0, 5), ("ingest", 1, 5), ("classify", 2, 5), ("check", 3, 5),
                     ("report", 4, 5), ("done", 5, 5)]
    assert set(report.timings_ms) == {"load_ms", "ingest_ms", "classify_ms", "check_ms",
                                      "report_ms"}
    assert engine.store.document(report.document.id).path == "co-branding.txt"
    flags = {f.rule: f for f in report.flags}
    assert len(flags) == 11
    ranks = [(f.severity.rank) for f in report.flags]
    assert ranks == sorted(ranks)
    law = flags["governing-law"]
    assert law.verdict is Verdict.COMPLIANT
    assert law.explanation == "governed by the law of New York (accepted: Delaware, New York)"
    text = src.read_text(encoding="utf-8")
    assert overlaps((law.citation.char_start, law.citation.char_end), [(5349, 5474)])
    assert law.quote == " ".join(text[law.citation.char_start:law.citation.char_end].split())
    assert law.citation.line_start is not None and law.citation.chunk_id
    by_chunk = chunk_types(report.clauses)
    assert "Governing Law" in by_chunk[law.citation.chunk_id]
    assert by_chunk[law.citation.chunk_id]["Governing Law"] >= law.score
    notice = flags["termination-for-convenience"]  # the finder is not reliable for the type
    assert notice.verdict is Verdict.NEEDS_REVIEW
    assert notice.explanation.endswith("if it is one: states 'thirty (30) days', within 90 days")


def test_missing_and_absent_clauses(engine, tmp_path):
    path = tmp_path / "short.txt"
    path.write_text(
        "SUPPLY AGREEMENT\n\nThe Supplier shall deliver the goods listed in Schedule A to the "
        "Buyer's warehouse every Monday.\n\nThe Buyer shall pay each invoice within thirty days "
        "of receipt.\n\nThis Agreement shall be governed by and construed in accordance with the "
        "laws of the State of California.\n", encoding="utf-8")
    report = engine.scan(path)
    flags = {f.rule: f for f in report.flags}
    law = flags["governing-law"]
    assert (law.verdict, law.explanation) == (
        Verdict.DEVIATES, ("governed by the law of California, not one of the accepted "
                           "Delaware, New York"))
    assert report.flags[0].rule == "governing-law"  # high severity and deviates come first
    cap = flags["liability-cap"]
    assert cap.verdict is Verdict.NOT_FOUND and cap.citation is None
    assert cap.explanation.startswith("no Cap On Liability clause was found; expected: Each "
                                      "party's total liability is capped at no less than 12 "
                                      "months of fees.")
    compete = flags["non-compete"]  # forbidden and not found: "not found", not "compliant"
    assert (compete.verdict, compete.citation) == (Verdict.NOT_FOUND, None)
    assert compete.explanation.startswith("no Non-Compete clause was found, which is what the "
                                          "rule wants")
    assert report.to_json()["flags"][0]["citation"]["line_start"] == 7
