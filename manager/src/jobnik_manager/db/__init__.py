"""Storage: the engine, the tables, their migrations and the claim query."""
