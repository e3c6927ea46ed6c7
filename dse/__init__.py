"""dse: design-space exploration for AI chips."""
