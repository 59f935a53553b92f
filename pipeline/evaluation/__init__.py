"""Train/test evaluation of rating systems and scenarios, and tuning."""
