"""The use cases: one module per command, each a function from a typed request to a typed result.

Between the command line (which parses a request and renders the result) and the adapters and core it drives.
"""
