"""The rating engine of one period under a rule set, on the players' positions in NumPy."""
