"""Checks against measurements: the validation suite, calibration, the host roofline health check,
GPU spec queries and profiler imports."""
