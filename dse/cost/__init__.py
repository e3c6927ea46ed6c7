"""Cost models of a design batch: area (this issue), cost and power (later issues)."""
