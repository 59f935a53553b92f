"""The object store: atomic writes, its one-writer lock, monthly tables between stages, what a run keeps."""
