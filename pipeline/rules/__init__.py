"""Rule sets as data, FIDE's clauses one function each, the conversion tables, the generated doc."""
