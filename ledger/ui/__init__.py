"""The web view of a ledger: ``ledger ui`` (served live) and ``ledger report`` (a static site).

Rendering stack: Jinja2 templates with autoescape on for every template, charts drawn on the
server as SVG (``svg.py``), one small script for sorting and filtering tables, and the
standard library's HTTP server. See docs/how-to/view-runs.md for why.
"""
