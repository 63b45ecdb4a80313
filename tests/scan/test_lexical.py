"""The lexical clause finder: its TF-IDF vectors and scores against scikit-learn's, the context
views, and the shipped model with the real scanner."""

from __future__ import annotations

import numpy as np
import pytest

from citewise.scan.classify import Unit, is_bare_heading
from citewise.scan.lexical import VIEWS, LexicalModel, context_views, terms
from citewise.scan.playbook import load_playbook

CORPUS = [
    "This Agreement shall be governed by the laws of the State of New York.",
    "Neither party may assign this Agreement without the prior written consent of the other.",
    "The Supplier shall deliver the goods every Monday, and the goods shall be inspected.",
    "12. GOVERNING LAW",
    "Either party may terminate this Agreement for convenience on thirty (30) days' notice.",
    "Licensee shall not assign, transfer or sublicense any of its rights under this Agreement.",
]


def _fitted():  # type: ignore[no-untyped-def]
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    vec = sklearn_text.TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, dtype=np.float32)
    vec.fit(CORPUS)
    vocabulary = {str(t): int(i) for t, i in vec.vocabulary_.items()}
    return vec, vocabulary


def test_terms_are_words_and_word_pairs():
    assert terms("The Laws of New-York, a") == ["the", "laws", "of", "new", "york", "the laws",
                                                "laws of", "of new", "new york"]


def test_vectors_equal_scikit_learns_tfidf():
    vec, vocabulary = _fitted()
    model = LexicalModel(("x",), vocabulary, vec.idf_.astype(np.float32),
                         np.zeros((len(VIEWS), len(vocabulary), 1), np.float32),
                         np.zeros(1, np.float32))
    texts = CORPUS + ["the goods, the goods and the GOODS of New York", "zzz qqq", ""]
    expected = vec.transform(texts).toarray()
    for text, row in zip(texts, expected, strict=True):
        cols, values = model.vector(text)
        dense = np.zeros(len(vocabulary), np.float32)
        dense[cols] = values
        assert np.allclose(dense, row, atol=1e-6), text


def test_scores_equal_the_logistic_regressions_decision_function():
    linear = pytest.importorskip("sklearn.linear_model")
    vec, vocabulary = _fitted()
    views = context_views(CORPUS, [is_bare_heading(t) for t in CORPUS])
    x = np.hstack([vec.transform([v[i] for v in views]).toarray() for i in range(len(VIEWS))])
    y = np.array([1, 0, 0, 0, 0, 1])  # the two assignment clauses
    fit = linear.LogisticRegression(C=10.0).fit(x, y)
    size = len(vocabulary)
    model = LexicalModel(("Anti-Assignment",), vocabulary, vec.idf_.astype(np.float32),
                         fit.coef_[0].reshape(len(VIEWS), size, 1).astype(np.float32),
                         fit.intercept_.astype(np.float32))
    assert np.allclose(model.scores(views)[:, 0], fit.decision_function(x), atol=1e-4)


def test_context_views_carry_the_heading_and_the_neighbours():
    texts = ["1. Definitions", "Terms have the meanings below.", "12. GOVERNING LAW",
             "This Agreement is governed by Delaware law.", "Each party shall submit to its courts."]
    views = context_views(texts, [is_bare_heading(t) for t in texts])
    assert views[0] == ("1. Definitions", "1. Definitions", "", texts[1])
    assert views[3] == (texts[3], "12. GOVERNING LAW", "12. GOVERNING LAW", texts[4])
    assert views[4] == (texts[4], "12. GOVERNING LAW", texts[3], "")


def test_the_shipped_lexical_model_reads_the_heading(engine):
    classifier = engine.scanner(load_playbook("default")).classifier
    p = classifier.prototypes
    assert p.lexical is not None
    assert set(p.lexical.labels) == {r.clause_type for r in load_playbook("default").rules}
    # the same sentence under a governing-law heading and under a payment heading
    sentence = "All disputes shall be resolved under the laws of the State of Delaware."
    law = [Unit("15. GOVERNING LAW", 0, 17), Unit(sentence, 18, 18 + len(sentence))]
    pay = [Unit("4. PAYMENT TERMS", 0, 16), Unit(sentence, 17, 17 + len(sentence))]
    j = p.labels.index("Governing Law")
    under_law, under_pay = (classifier.all_scores(u)[1, j] for u in (law, pay))
    assert under_law > under_pay
    assert under_law >= classifier.threshold("Governing Law")
    # the lexical types add their logit to the scaled embedding score
    vectors = classifier.embedder.embed_documents([u.text for u in law])
    cols = [p.labels.index(t) for t in p.lexical.labels]
    views = context_views([u.text for u in law], [True, False])
    assert np.allclose(classifier.scores(vectors, views)[:, cols],
                       p.lexical.scores(views) + p.embedding_scale * classifier.scores(vectors)[:, cols],
                       atol=1e-4)
