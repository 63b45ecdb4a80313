"""Training citewise's own models: the cross-encoder reranker (``citewise train-reranker``).

:mod:`citewise.train.data` builds (question, positives, hard negatives) examples from training
splits and user JSONL; :mod:`citewise.train.reranker` fine-tunes, exports to ONNX and
quantises. Needs the ``train`` extra (``pip install 'citewise[train]'``).
"""
