"""What people read of a month: the published rating list and the player card."""
