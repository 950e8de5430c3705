"""Renderers: core results as text, Markdown, JSON and GitHub Actions output, one module per format.

Strings only, no I/O, and every checkout-controlled value passes `render.escape` on its way out."""
