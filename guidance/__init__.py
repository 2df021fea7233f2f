"""The published guidance: clusters and their facts, admin, seed data, pages, and the engine."""
