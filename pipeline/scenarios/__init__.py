"""Scenarios: the model, the scenarios file, the chain of lists and a system scenario's month."""
