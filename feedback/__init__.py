"""The production side of the loop: feedback store, collector service, LangChain callback, PII redaction, lineage."""
