"""Fixtures for the index tables and the web view."""
