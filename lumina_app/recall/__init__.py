"""Recall: ranked retrieval of what was said earlier (lexical BM25 and embeddings, fused),
for the ``recall`` tool, the recall routes and auto-recall."""
