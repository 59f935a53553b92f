"""YAML presets of rating-system settings for `ratings evaluate --rules NAME` and `ratings tune`."""
