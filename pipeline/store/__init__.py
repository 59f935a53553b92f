"""The object store: atomic writes, its one-writer lock, and monthly tables between stages."""
