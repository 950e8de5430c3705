"""Renderers: core results as text, Markdown, JSON and GitHub Actions output, one module per format.

Each name is imported from the module of its format (`render.text`, `render.jsondoc`, ...).

- In: `Diagnostic`s and lint reports (`report`), registrations, plans, run results and gate
  outcomes (`text`, `markdown`, `jsondoc`, `github`), all core types.
- Out: strings. No I/O here; the command line writes them.
- Every checkout-controlled value passes `render.escape` on its way out, so a file name,
  label or reason cannot inject a workflow command, a line of its own or Markdown.
"""
