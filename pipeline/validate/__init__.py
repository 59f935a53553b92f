"""Validation: raw records split into games and quarantine, identities, the `ratings validate` report."""
