"""Connectors: read test suites, benchmarks and SQL feedback tables into tuneloop records."""
