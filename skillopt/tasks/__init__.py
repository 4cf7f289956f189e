"""The task layer: the task contract, task folders and their loader, evaluators, the LLM judge, answer
parsing, user code and CSV import. Import the modules themselves; nothing is re-exported."""
