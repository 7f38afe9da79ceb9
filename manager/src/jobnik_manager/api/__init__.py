"""HTTP layer: routers, wire schemas and error rendering. Thin by design."""
