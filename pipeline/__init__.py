"""Pure code of the rating pipeline: rule sets, rating engine, file formats, analytics, generator."""
