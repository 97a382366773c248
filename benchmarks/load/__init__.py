"""Load, burst and leak-census tools for a running ``lmc serve`` (they need psutil).

``loadtest`` (N concurrent sessions; ``--duration`` a timed mix of languages with
the server's footprint, :mod:`.loadmix`), ``burst`` (N session creations at once)
and ``census`` (what a server holds on its host). Run from the repository's root:
``python -m benchmarks.load.loadtest --help``.
"""
