"""The landing zone and its reading: dumps, the registry and the seed list, into raw frames."""
