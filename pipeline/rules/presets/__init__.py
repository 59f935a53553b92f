"""Rule-set presets as YAML data files."""
