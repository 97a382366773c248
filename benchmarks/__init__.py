"""Measuring tools of lmc-runtime, kept out of the installed package.

Run them from a checkout of the repository (see README.md here): ``lmc bench`` finds
this folder next to an editable install, and the load tools run with
``python -m benchmarks.load.<tool>`` from the repository's root.
"""
