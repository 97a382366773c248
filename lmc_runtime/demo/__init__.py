"""The demo that ``lmc demo`` runs: ``demo.jsonl``, LMC messages as JSON lines.

It needs nothing beyond the package's own dependencies (its image is drawn with
Pillow), so it runs right after ``pip install lmc-runtime``.
"""
